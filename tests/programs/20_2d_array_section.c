// 2-D array sections: rows of a static 2-D array and of a heap array of rows.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define R 8
#define C 10

int m[R][C];

int main(void) {
  int offdev = 0;
  int dev = omp_get_default_device();
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) m[i][j] = i * 100 + j;
#pragma omp target map(tofrom: m[2:3][0:C]) map(tofrom: offdev)
  {
    offdev |= omp_is_initial_device();
    for (int i = 2; i < 5; i++)
      for (int j = 0; j < C; j++) m[i][j] = -m[i][j];
  }
  if (offdev) FAIL("target region ran on the host");
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      int want = (i >= 2 && i < 5) ? -(i * 100 + j) : i * 100 + j;
      if (m[i][j] != want) FAIL("m[%d][%d]=%d expected %d", i, j, m[i][j], want);
    }
  // pointer to rows of C doubles
  double (*q)[C] = malloc(R * sizeof(*q));
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) q[i][j] = i + j * 0.5;
#pragma omp target enter data map(to: q[3:2][0:C])
  if (!omp_target_is_present(&q[3][0], dev) || !omp_target_is_present(&q[4][C - 1], dev))
    FAIL("rows 3..4 not present");
  if (omp_target_is_present(&q[2][C - 1], dev) || omp_target_is_present(&q[5][0], dev))
    FAIL("rows outside section present");
#pragma omp target
  for (int i = 3; i < 5; i++)
    for (int j = 0; j < C; j++) q[i][j] *= 2;
#pragma omp target exit data map(from: q[3:2][0:C])
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      double want = (i == 3 || i == 4) ? 2 * (i + j * 0.5) : i + j * 0.5;
      if (q[i][j] != want) FAIL("q[%d][%d]=%g expected %g", i, j, q[i][j], want);
    }
  free(q);
  return 0;
}
