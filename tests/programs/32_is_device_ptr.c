// is_device_ptr with memory from omp_target_alloc.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 4096

int main(void) {
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  double *d = omp_target_alloc(N * sizeof(double), dev);
  if (!d) FAIL("omp_target_alloc returned NULL");
  if (omp_target_is_present(d, dev)) FAIL("omp_target_alloc memory reported as mapped host data");
  int init = -1;
#pragma omp target is_device_ptr(d) map(from: init)
  {
    init = omp_is_initial_device();
    for (int i = 0; i < N; i++) d[i] = i * 0.5;
  }
  if (init != 0) FAIL("region ran on host");
#pragma omp target teams distribute parallel for is_device_ptr(d)
  for (int i = 0; i < N; i++) d[i] += 1.0;
  double *h = malloc(N * sizeof(double));
  if (omp_target_memcpy(h, d, N * sizeof(double), 0, 0, host, dev)) FAIL("memcpy d->h failed");
  for (int i = 0; i < N; i++)
    if (h[i] != i * 0.5 + 1.0) FAIL("d[%d]=%g expected %g", i, h[i], i * 0.5 + 1.0);
  // device pointer stored in a struct passed by value, and pointer arithmetic
  double *d2 = d + 100;
  double s = 0;
#pragma omp target is_device_ptr(d2) map(tofrom: s)
  for (int i = 0; i < 10; i++) s += d2[i];
  double want = 0;
  for (int i = 100; i < 110; i++) want += i * 0.5 + 1.0;
  if (s != want) FAIL("sum via offset device pointer: %g expected %g", s, want);
  omp_target_free(d, dev);
  free(h);
  return 0;
}
