// omp_target_memcpy_rect in 3-D, including device->device.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define A 5
#define B 6
#define C 7

int main(void) {
  int offdev = 1;
#pragma omp target map(tofrom: offdev)
  offdev = omp_is_initial_device();
  if (offdev) FAIL("target region ran on the host");
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  static int src[A][B][C], dst[A][B][C];
  for (int i = 0; i < A; i++)
    for (int j = 0; j < B; j++)
      for (int k = 0; k < C; k++) { src[i][j][k] = i * 10000 + j * 100 + k; dst[i][j][k] = -7; }
  int *d1 = omp_target_alloc(sizeof src, dev), *d2 = omp_target_alloc(sizeof src, dev);
  if (!d1 || !d2) FAIL("alloc failed");
  size_t dims[3] = {A, B, C}, zero[3] = {0, 0, 0};
  size_t all[3] = {A, B, C};
  if (omp_target_memcpy_rect(d1, src, sizeof(int), 3, all, zero, zero, dims, dims, dev, host))
    FAIL("full 3-D copy h->d failed");
  omp_target_memset(d2, 0, sizeof src, dev);
  // device->device: block [1..3][2..4][1..5] of d1 -> same place in d2
  size_t vol[3] = {3, 3, 5}, off[3] = {1, 2, 1};
  if (omp_target_memcpy_rect(d2, d1, sizeof(int), 3, vol, off, off, dims, dims, dev, dev))
    FAIL("3-D copy d->d failed");
  // device->host: block of d2 at [0..2][0..3][0..6] -> dst at [2][2][0]
  size_t vol2[3] = {3, 4, 7}, soff[3] = {1, 1, 0}, doff[3] = {2, 2, 0};
  if (omp_target_memcpy_rect(dst, d2, sizeof(int), 3, vol2, doff, soff, dims, dims, host, dev))
    FAIL("3-D copy d->h failed");
  for (int i = 0; i < A; i++)
    for (int j = 0; j < B; j++)
      for (int k = 0; k < C; k++) {
        int want = -7;
        if (i >= 2 && j >= 2 && j < 6) {
          int si = i - 2 + 1, sj = j - 2 + 1, sk = k;
          int inblk = si >= 1 && si < 4 && sj >= 2 && sj < 5 && sk >= 1 && sk < 6;
          want = inblk ? src[si][sj][sk] : 0;
        }
        if (dst[i][j][k] != want) FAIL("dst[%d][%d][%d]=%d expected %d", i, j, k, dst[i][j][k], want);
      }
  omp_target_free(d1, dev);
  omp_target_free(d2, dev);
  return 0;
}
