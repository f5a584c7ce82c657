// The 'loop' construct on the device: target teams loop, target parallel loop, loop bind.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 5000

int main(void) {
  float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
  for (int i = 0; i < N; i++) { x[i] = (float)i; y[i] = 1.0f; }
  int ondev = 0;
#pragma omp target teams loop map(to: x[0:N]) map(tofrom: y[0:N]) reduction(max: ondev)
  for (int i = 0; i < N; i++) {
    y[i] = 2.0f * x[i] + y[i];
    ondev = !omp_is_initial_device();
  }
  if (!ondev) FAIL("target teams loop ran on host");
  for (int i = 0; i < N; i++)
    if (y[i] != 2.0f * i + 1.0f) FAIL("y[%d]=%g", i, y[i]);
  long s = 0;
#pragma omp target parallel loop reduction(+: s) map(to: x[0:N])
  for (int i = 0; i < N; i++) s += (long)x[i];
  if (s != (long)N * (N - 1) / 2) FAIL("parallel loop sum %ld", s);
  int m[64][64];
#pragma omp target teams loop collapse(2) map(from: m)
  for (int i = 0; i < 64; i++)
    for (int j = 0; j < 64; j++) m[i][j] = i ^ j;
  for (int i = 0; i < 64; i++)
    for (int j = 0; j < 64; j++)
      if (m[i][j] != (i ^ j)) FAIL("m[%d][%d]=%d", i, j, m[i][j]);
  int cnt[N];
  for (int i = 0; i < N; i++) cnt[i] = 0;
#pragma omp target teams map(tofrom: cnt)
#pragma omp loop bind(teams)
  for (int i = 0; i < N; i++) cnt[i]++;
  for (int i = 0; i < N; i++)
    if (cnt[i] != 1) FAIL("loop bind(teams): iteration %d ran %d times", i, cnt[i]);
  free(x); free(y);
  return 0;
}
