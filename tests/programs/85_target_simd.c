// simd constructs on the device: target simd, target parallel for simd, teams distribute (parallel for) simd.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 4099

int main(void) {
  float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
  for (int i = 0; i < N; i++) { x[i] = (float)(i % 100); y[i] = 0.0f; }
  int ondev = 0;
#pragma omp target simd map(to: x[0:N]) map(tofrom: y[0:N])
  for (int i = 0; i < N; i++) y[i] = x[i] * 2.0f;
#pragma omp target map(from: ondev)
  ondev = !omp_is_initial_device();
  if (!ondev) FAIL("region ran on host");
  for (int i = 0; i < N; i++)
    if (y[i] != 2.0f * (i % 100)) FAIL("target simd: y[%d]=%g", i, y[i]);
  long s = 0;
#pragma omp target parallel for simd map(to: x[0:N]) reduction(+: s)
  for (int i = 0; i < N; i++) s += (long)x[i];
  long want = 0;
  for (int i = 0; i < N; i++) want += i % 100;
  if (s != want) FAIL("parallel for simd reduction: %ld expected %ld", s, want);
#pragma omp target teams distribute simd map(tofrom: y[0:N])
  for (int i = 0; i < N; i++) y[i] += 1.0f;
#pragma omp target teams distribute parallel for simd map(tofrom: y[0:N]) safelen(8)
  for (int i = 0; i < N; i++) y[i] *= 3.0f;
  for (int i = 0; i < N; i++)
    if (y[i] != (2.0f * (i % 100) + 1.0f) * 3.0f) FAIL("teams distribute simd: y[%d]=%g", i, y[i]);
  int lp = -1;
#pragma omp target simd lastprivate(lp) map(tofrom: lp)
  for (int i = 0; i < 77; i++) lp = i;
  if (lp != 76) FAIL("simd lastprivate=%d", lp);
  free(x); free(y);
  return 0;
}
