// LLVM-REF: fails (LLVM 22 keeps pointers to the caller's omp_target_memcpy_rect_async arrays until its task runs, so releasing them after the call crashes it; it also accepts an unknown device number and fails later inside the helper task)
// EXPECT-STDERR: omp_target_memcpy_async: device 1000 is not available
// The arguments of the async memory routines are the runtime's to keep once the call returns:
// a rect copy deferred behind a slow task still copies the right block after the caller has
// overwritten and freed its volume/offset/dimension arrays. Bad arguments are refused at the call.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define ROWS 8
#define COLS 16

int main(void) {
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  int grid[ROWS][COLS] = {{0}};
  int *g = omp_target_alloc(ROWS * COLS * sizeof(int), dev);
  if (!g) FAIL("allocation failed");
  int k = 0, failed_call = 0;
  omp_depend_t after_k;

#pragma omp parallel num_threads(4)
#pragma omp single
  {
#pragma omp depobj(after_k) depend(in: k)
#pragma omp task depend(out: k)
    {
      usleep(200 * 1000);
#pragma omp target is_device_ptr(g)
      for (int i = 0; i < ROWS * COLS; i++) g[i] = 1000 + i;
    }
    size_t *arrays = malloc(10 * sizeof(size_t));
    size_t *volume = arrays, *dst_offsets = arrays + 2, *src_offsets = arrays + 4, *dims = arrays + 6;
    volume[0] = 3; volume[1] = 5;
    dst_offsets[0] = 0; dst_offsets[1] = 0;
    src_offsets[0] = 4; src_offsets[1] = 10;
    dims[0] = ROWS; dims[1] = COLS;
    if (omp_target_memcpy_rect_async(grid, g, sizeof(int), 2, volume, dst_offsets, src_offsets, dims, dims,
                                     host, dev, 1, &after_k))
      failed_call = 1;
    for (int i = 0; i < 10; i++) arrays[i] = 1u << 20; // the runtime must hold its own copies
    free(arrays);
#pragma omp taskwait
#pragma omp depobj(after_k) destroy
  }
  if (failed_call) FAIL("omp_target_memcpy_rect_async failed");
  for (int i = 0; i < ROWS; i++)
    for (int j = 0; j < COLS; j++) {
      int want = (i < 3 && j < 5) ? 1000 + (i + 4) * COLS + (j + 10) : 0;
      if (grid[i][j] != want) FAIL("grid[%d][%d]=%d want %d", i, j, grid[i][j], want);
    }

  // Refused at the call, with nothing left to run later.
  int unknown = 1000, x = 0; // past any machine's devices
  if (omp_target_memcpy_async(NULL, g, 4, 0, 0, dev, dev, 0, NULL) == 0) FAIL("null dst accepted");
  if (omp_target_memcpy_async(&x, g, 4, 0, 0, host, unknown, 0, NULL) == 0) FAIL("unknown device accepted");
  if (omp_target_memcpy_async(&x, g, 4, 0, 0, host, dev, 1, NULL) == 0) FAIL("missing depend objects accepted");
  size_t one[1] = {1};
  if (omp_target_memcpy_rect_async(&x, g, 4, 1, one, one, one, one, one, unknown, dev, 0, NULL) == 0)
    FAIL("rect copy to an unknown device accepted");
  omp_target_memset_async(g, 0, 4, unknown, 0, NULL);
#pragma omp taskwait
  if (x != 0) FAIL("a refused copy ran anyway");
  omp_target_free(g, dev);
  printf("async arguments kept and checked\n");
  return 0;
}
