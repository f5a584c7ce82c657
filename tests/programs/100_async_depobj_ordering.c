// omp_target_memcpy_async, omp_target_memset_async and omp_target_memcpy_rect_async honour their
// depend objects where tasks really are deferred (inside parallel/single): each operation waits
// for the slow task it depends on, and a task that depends on the operation sees its result.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 1024
#define ROWS 8
#define COLS 16

int main(void) {
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  int *r = calloc(N, sizeof(int)), *r2 = calloc(N, sizeof(int));
  int grid[ROWS][COLS] = {{0}};
  int *d = omp_target_alloc(N * sizeof(int), dev);
  int *g = omp_target_alloc(ROWS * COLS * sizeof(int), dev);
  if (!r || !r2 || !d || !g) FAIL("allocation failed");
  int k = 0, k2 = 0, calls_failed = 0;
  int copied_ok = 0, filled_ok = 0, rect_ok = 0;
  omp_depend_t after_k[2], after_k_again[2];

#pragma omp parallel num_threads(4)
#pragma omp single
  {
#pragma omp depobj(after_k[0]) depend(in: k)
#pragma omp depobj(after_k[1]) depend(out: k2)
#pragma omp depobj(after_k_again[0]) depend(inout: k)
#pragma omp depobj(after_k_again[1]) depend(out: k2)

    // 1. A slow producer of d; the copy back depends on it, a checker on the copy.
#pragma omp task depend(out: k)
    {
      usleep(200 * 1000);
#pragma omp target is_device_ptr(d)
      for (int i = 0; i < N; i++) d[i] = 3 * i + 1;
    }
    if (omp_target_memcpy_async(r, d, N * sizeof(int), 0, 0, host, dev, 2, after_k)) calls_failed = 1;
#pragma omp task depend(in: k2) shared(copied_ok)
    {
      copied_ok = 1;
      for (int i = 0; i < N; i++)
        if (r[i] != 3 * i + 1) { copied_ok = 0; fprintf(stderr, "r[%d]=%d\n", i, r[i]); break; }
    }

    // 2. A fill that must come after the copy above (inout after in), then a copy of the fill.
    if (omp_target_memset_async(d, 0x11, N * sizeof(int), dev, 2, after_k_again) != d) calls_failed = 1;
    if (omp_target_memcpy_async(r2, d, N * sizeof(int), 0, 0, host, dev, 2, after_k)) calls_failed = 1;
#pragma omp task depend(in: k2) shared(filled_ok)
    {
      filled_ok = 1;
      for (int i = 0; i < N; i++)
        if (r2[i] != 0x11111111) { filled_ok = 0; fprintf(stderr, "r2[%d]=%#x\n", i, r2[i]); break; }
    }

    // 3. A slow producer of the device grid; a rect copy of rows 2..5, columns 4..11 back.
#pragma omp task depend(inout: k)
    {
      usleep(200 * 1000);
#pragma omp target is_device_ptr(g)
      for (int i = 0; i < ROWS * COLS; i++) g[i] = 1000 + i;
    }
    size_t *arrays = malloc(10 * sizeof(size_t));
    size_t *volume = arrays, *offsets = arrays + 2, *dims = arrays + 4;
    volume[0] = 4; volume[1] = 8;
    offsets[0] = 2; offsets[1] = 4;
    dims[0] = ROWS; dims[1] = COLS;
    if (omp_target_memcpy_rect_async(grid, g, sizeof(int), 2, volume, offsets, offsets, dims, dims,
                                     host, dev, 2, after_k))
      calls_failed = 1;
#pragma omp task depend(in: k2) shared(rect_ok, grid)
    {
      rect_ok = 1;
      for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS; j++) {
          int inside = i >= 2 && i < 6 && j >= 4 && j < 12;
          int want = inside ? 1000 + i * COLS + j : 0;
          if (grid[i][j] != want) { rect_ok = 0; fprintf(stderr, "grid[%d][%d]=%d want %d\n", i, j, grid[i][j], want); }
        }
    }
#pragma omp taskwait
#pragma omp depobj(after_k[0]) destroy
#pragma omp depobj(after_k[1]) destroy
#pragma omp depobj(after_k_again[0]) destroy
#pragma omp depobj(after_k_again[1]) destroy
    free(arrays);
  }
  if (calls_failed) FAIL("an async call reported failure");
  if (!copied_ok) FAIL("the async copy ran before the task it depends on, or its dependent ran before it");
  if (!filled_ok) FAIL("the async fill was not ordered between the copies");
  if (!rect_ok) FAIL("the async rect copy was not ordered after its producer");
  omp_target_free(d, dev);
  omp_target_free(g, dev);
  free(r); free(r2);
  printf("async operations ordered by their depend objects\n");
  return 0;
}
