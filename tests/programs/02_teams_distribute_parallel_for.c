// SPMD: target teams distribute parallel for over a large array.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 100000

int main(void) {
  double *a = malloc(N * sizeof(double)), *b = malloc(N * sizeof(double)), *c = malloc(N * sizeof(double));
  int dev_flag = 0;
  for (int i = 0; i < N; i++) { a[i] = i; b[i] = 2.0 * i; c[i] = -1.0; }
#pragma omp target teams distribute parallel for map(to: a[0:N], b[0:N]) map(from: c[0:N]) \
    map(tofrom: dev_flag)
  for (int i = 0; i < N; i++) {
    c[i] = a[i] + b[i];
    if (i == N / 2 && !omp_is_initial_device()) dev_flag = 1;
  }
  if (dev_flag != 1) FAIL("loop body did not run on the device");
  for (int i = 0; i < N; i++)
    if (c[i] != 3.0 * i) FAIL("c[%d]=%g, expected %g", i, c[i], 3.0 * i);
  // Each iteration must run exactly once.
  int *cnt = calloc(N, sizeof(int));
#pragma omp target teams distribute parallel for map(tofrom: cnt[0:N])
  for (int i = 0; i < N; i++) cnt[i]++;
  for (int i = 0; i < N; i++)
    if (cnt[i] != 1) FAIL("iteration %d ran %d times", i, cnt[i]);
  free(a); free(b); free(c); free(cnt);
  return 0;
}
