// use_device_ptr: obtain device addresses of mapped data on the host and pass them on.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 100

int main(void) {
  int offdev = 0;
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  int *a = malloc(N * sizeof(int)), *orig = a;
  for (int i = 0; i < N; i++) a[i] = i;
  int *dptr = NULL;
#pragma omp target data map(tofrom: a[0:N])
  {
#pragma omp target data use_device_ptr(a)
    {
      dptr = a;
    }
    if (a != orig) FAIL("a not restored after use_device_ptr region");
    if (dptr == NULL || dptr == orig) FAIL("use_device_ptr did not give a distinct device address");
    if (dptr != omp_get_mapped_ptr(orig, dev)) FAIL("use_device_ptr address != omp_get_mapped_ptr");
    // Copy into the device buffer using the device address.
    int src[N];
    for (int i = 0; i < N; i++) src[i] = 7 * i;
    if (omp_target_memcpy(dptr, src, sizeof(src), 0, 0, dev, host)) FAIL("omp_target_memcpy failed");
    int sum = 0;
#pragma omp target map(tofrom: sum) map(tofrom: offdev)
    {
      offdev |= omp_is_initial_device();
      for (int i = 0; i < N; i++) sum += a[i];
    }
    if (offdev) FAIL("target region ran on the host");
    if (sum != 7 * N * (N - 1) / 2) FAIL("device did not see data written via device pointer: %d", sum);
    // is_device_ptr with the obtained pointer
#pragma omp target is_device_ptr(dptr)
    for (int i = 0; i < N; i++) dptr[i] += 1;
  }
  for (int i = 0; i < N; i++)
    if (a[i] != 7 * i + 1) FAIL("a[%d]=%d expected %d", i, a[i], 7 * i + 1);
  // use_device_ptr on target data with its own map clause
  double *d = malloc(8 * sizeof(double));
  double *ddev = NULL;
#pragma omp target data map(to: d[0:8]) use_device_ptr(d)
  ddev = d;
  if (ddev == NULL || ddev == d) FAIL("use_device_ptr with map on same construct failed");
  free(a); free(d);
  return 0;
}
