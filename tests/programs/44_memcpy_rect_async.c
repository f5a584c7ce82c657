// omp_target_memcpy_rect_async with depend objects and taskwait.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define R 16
#define C 16

int main(void) {
  int offdev = 0;
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  static float a[R][C], b[R][C];
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) { a[i][j] = i * C + j; b[i][j] = 0; }
  float *d = omp_target_alloc(sizeof a, dev);
  if (!d) FAIL("alloc failed");
  omp_target_memset(d, 0, sizeof a, dev);
  size_t dims[2] = {R, C}, vol[2] = {8, 4}, off[2] = {4, 6}, zero[2] = {0, 0};
  int token = 0;
  omp_depend_t dep;
#pragma omp depobj(dep) depend(inout: token)
  if (omp_target_memcpy_rect_async(d, a, sizeof(float), 2, vol, off, off, dims, dims, dev, host, 0, NULL))
    FAIL("rect async h->d failed");
#pragma omp taskwait
#pragma omp task depend(inout: token)
  {
#pragma omp target is_device_ptr(d) map(tofrom: offdev)
    {
      offdev |= omp_is_initial_device();
      for (int k = 0; k < R * C; k++) d[k] *= 2.0f;
    }
    if (offdev) FAIL("target region ran on the host");
  }
  size_t all[2] = {R, C};
  if (omp_target_memcpy_rect_async(b, d, sizeof(float), 2, all, zero, zero, dims, dims, host, dev, 1, &dep))
    FAIL("rect async d->h failed");
#pragma omp taskwait
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      int in = i >= 4 && i < 12 && j >= 6 && j < 10;
      float want = in ? 2.0f * (i * C + j) : 0.0f;
      if (b[i][j] != want) FAIL("b[%d][%d]=%g expected %g", i, j, b[i][j], want);
    }
#pragma omp depobj(dep) destroy
  omp_target_free(d, dev);
  return 0;
}
