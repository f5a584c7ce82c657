// target update of non-contiguous strided array sections starting at offset 0:
// a[0:4:2], a[0:4:4], p[0:3:5], and 2-D m[0:3:2][0:2:3].
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
#pragma omp target update from(a[0:4:2]) // elements 0,2,4,6
  for (int i = 0; i < N; i++) {
    int want = (i < 8 && i % 2 == 0) ? 100 + i : i;
    if (a[i] != want) FAIL("update from(a[0:4:2]): a[%d]=%d expected %d", i, a[i], want);
  }
  for (int i = 0; i < N; i++) a[i] = -i;
#pragma omp target update to(a[0:4:4]) // elements 0,4,8,12
  int dev[N];
#pragma omp target map(from: dev)
  for (int i = 0; i < N; i++) dev[i] = a[i];
  for (int i = 0; i < N; i++) {
    int want = (i % 4 == 0) ? -i : 100 + i;
    if (dev[i] != want) FAIL("update to(a[0:4:4]): device a[%d]=%d expected %d", i, dev[i], want);
  }
#pragma omp target exit data map(delete: a)
  // strided update on a heap array through a pointer
  double *p = malloc(N * sizeof(double));
  for (int i = 0; i < N; i++) p[i] = i;
#pragma omp target enter data map(to: p[0:N])
#pragma omp target
  for (int i = 0; i < N; i++) p[i] *= 10;
#pragma omp target update from(p[0:3:5]) // 0,5,10
  for (int i = 0; i < N; i++) {
    double want = (i % 5 == 0 && i < 15) ? 10.0 * i : i;
    if (p[i] != want) FAIL("update from(p[0:3:5]): p[%d]=%g expected %g", i, p[i], want);
  }
#pragma omp target exit data map(delete: p[0:N])
  free(p);
  // 2-D: rows 0,2,4 x cols 0,3
#pragma omp target enter data map(to: m)
#pragma omp target
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 8; j++) m[i][j] = 1 + i * 8 + j;
#pragma omp target update from(m[0:3:2][0:2:3])
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 8; j++) {
      int want = (i % 2 == 0 && (j == 0 || j == 3)) ? 1 + i * 8 + j : 0;
      if (m[i][j] != want) FAIL("update from(m[0:3:2][0:2:3]): m[%d][%d]=%d expected %d", i, j, m[i][j], want);
    }
#pragma omp target exit data map(delete: m)
  return 0;
}
