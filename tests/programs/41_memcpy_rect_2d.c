// omp_target_memcpy_rect in 2-D: sub-matrix copies host->device->host with offsets.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define R 10
#define C 12

int main(void) {
  int offdev = 0;
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  static double src[R][C], dst[R][C];
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) { src[i][j] = i * 100 + j; dst[i][j] = -1; }
  // device matrix of 6 x 8
  double *d = omp_target_alloc(6 * 8 * sizeof(double), dev);
  if (!d) FAIL("alloc failed");
  if (omp_target_memset(d, 0, 6 * 8 * sizeof(double), dev) != d) FAIL("memset failed");
  // copy src[2..5][3..7] (4 x 5) into device at [1][2]
  size_t vol[2] = {4, 5}, doff[2] = {1, 2}, soff[2] = {2, 3};
  size_t ddim[2] = {6, 8}, sdim[2] = {R, C};
  if (omp_target_memcpy_rect(d, src, sizeof(double), 2, vol, doff, soff, ddim, sdim, dev, host))
    FAIL("memcpy_rect h->d failed");
#pragma omp target is_device_ptr(d) map(tofrom: offdev)
  {
    offdev |= omp_is_initial_device();
    for (int k = 0; k < 48; k++) d[k] += 0.5;
  }
  if (offdev) FAIL("target region ran on the host");
  // copy the whole device matrix back into dst at [4][4]
  size_t vol2[2] = {6, 8}, doff2[2] = {4, 4}, soff2[2] = {0, 0};
  if (omp_target_memcpy_rect(dst, d, sizeof(double), 2, vol2, doff2, soff2, sdim, ddim, host, dev))
    FAIL("memcpy_rect d->h failed");
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      double want = -1;
      if (i >= 4 && j >= 4) {
        int di = i - 4, dj = j - 4;
        want = 0.5;
        if (di >= 1 && di < 5 && dj >= 2 && dj < 7) want += (di - 1 + 2) * 100 + (dj - 2 + 3);
      }
      if (dst[i][j] != want) FAIL("dst[%d][%d]=%g expected %g", i, j, dst[i][j], want);
    }
  // num_dims query: both pointers NULL returns max supported dims (>= 3)
  int maxd = omp_target_memcpy_rect(NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, dev, host);
  if (maxd < 3) FAIL("memcpy_rect(NULL,NULL) returned %d, expected >= 3", maxd);
  omp_target_free(d, dev);
  return 0;
}
