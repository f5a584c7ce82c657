// LLVM-REF: fails (strided section with non-zero start: libomptarget scales the start by the stride, a[1:5:3] copies 3,6,9,12,15)
// target update of strided sections with a non-zero lower bound: a[1:5:3], m[1:2:2][1:2:3].
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 16

int m[6][8];

int main(void) {
  int offdev = 0;
  int a[N];
  for (int i = 0; i < N; i++) a[i] = i;
#pragma omp target enter data map(to: a)
#pragma omp target map(tofrom: offdev)
  {
    offdev |= omp_is_initial_device();
    for (int i = 0; i < N; i++) a[i] = 100 + i;
  }
  if (offdev) FAIL("target region ran on the host");
#pragma omp target update from(a[1:5:3]) // elements 1,4,7,10,13
  for (int i = 0; i < N; i++) {
    int want = (i % 3 == 1 && i <= 13) ? 100 + i : i;
    if (a[i] != want) FAIL("update from(a[1:5:3]): a[%d]=%d expected %d", i, a[i], want);
  }
#pragma omp target exit data map(delete: a)
#pragma omp target enter data map(to: m)
#pragma omp target
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 8; j++) m[i][j] = 1 + i * 8 + j;
#pragma omp target update from(m[1:2:2][1:2:3]) // rows 1,3 x cols 1,4
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 8; j++) {
      int want = ((i == 1 || i == 3) && (j == 1 || j == 4)) ? 1 + i * 8 + j : 0;
      if (m[i][j] != want) FAIL("update from(m[1:2:2][1:2:3]): m[%d][%d]=%d expected %d", i, j, m[i][j], want);
    }
#pragma omp target exit data map(delete: m)
  return 0;
}
