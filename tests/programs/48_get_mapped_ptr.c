// omp_get_mapped_ptr: device address of mapped data, NULL when unmapped, host ptr for host.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int offdev = 0;
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  double a[50];
  for (int i = 0; i < 50; i++) a[i] = i;
  if (omp_get_mapped_ptr(a, dev) != NULL) FAIL("unmapped data has a mapped ptr");
  if (omp_get_mapped_ptr(a, host) != (void *)a) FAIL("mapped ptr on initial device != host ptr");
#pragma omp target enter data map(to: a[10:20])
  double *m = omp_get_mapped_ptr(&a[10], dev);
  double *m5 = omp_get_mapped_ptr(&a[15], dev);
  if (!m || !m5) FAIL("mapped ptr NULL for mapped data");
  if (m == &a[10]) FAIL("device copy has the host address");
  if (m5 != m + 5) FAIL("interior pointer not offset correctly");
  if (omp_get_mapped_ptr(&a[9], dev) != NULL || omp_get_mapped_ptr(&a[30], dev) != NULL)
    FAIL("mapped ptr outside section not NULL");
  // the mapped pointer is usable as a device pointer
  double v = 0;
  omp_target_memcpy(&v, m5, sizeof v, 0, 0, host, dev);
  if (v != 15.0) FAIL("value at mapped ptr=%g expected 15", v);
#pragma omp target is_device_ptr(m) map(tofrom: offdev)
  {
    offdev |= omp_is_initial_device();
    m[0] = -10.0;
  }
  if (offdev) FAIL("target region ran on the host");
#pragma omp target exit data map(from: a[10:20])
  if (a[10] != -10.0) FAIL("write through mapped ptr lost: a[10]=%g", a[10]);
  if (omp_get_mapped_ptr(&a[10], dev) != NULL) FAIL("mapped ptr non-NULL after unmapping");
  return 0;
}
