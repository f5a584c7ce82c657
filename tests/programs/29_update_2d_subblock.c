// LLVM-REF: fails (libomptarget merges the contiguous inner dimension but still copies only one element per row)
// target update of non-contiguous 2-D sub-blocks with a contiguous inner run: m[1:3][2:4], m[0:2][0:4].
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define R 6
#define C 8

int m[R][C];

int main(void) {
  int offdev = 0;
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) m[i][j] = i * C + j;
#pragma omp target enter data map(to: m)
#pragma omp target map(tofrom: offdev)
  {
    offdev |= omp_is_initial_device();
    for (int i = 0; i < R; i++)
      for (int j = 0; j < C; j++) m[i][j] = 1000 + i * C + j;
  }
  if (offdev) FAIL("target region ran on the host");
#pragma omp target update from(m[1:3][2:4]) // rows 1..3, cols 2..5
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      int in = i >= 1 && i <= 3 && j >= 2 && j <= 5;
      int want = (in ? 1000 : 0) + i * C + j;
      if (m[i][j] != want) FAIL("update from(m[1:3][2:4]): m[%d][%d]=%d expected %d", i, j, m[i][j], want);
    }
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) m[i][j] = -(i * C + j);
#pragma omp target update to(m[0:2][0:4]) // rows 0..1, cols 0..3
  int dev[R][C];
#pragma omp target map(from: dev)
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) dev[i][j] = m[i][j];
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      int in = i < 2 && j < 4;
      int want = in ? -(i * C + j) : 1000 + i * C + j;
      if (dev[i][j] != want) FAIL("update to(m[0:2][0:4]): device m[%d][%d]=%d expected %d", i, j, dev[i][j], want);
    }
#pragma omp target exit data map(delete: m)
  return 0;
}
