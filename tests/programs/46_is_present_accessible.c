// omp_target_is_present and omp_target_is_accessible.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int offdev = 1;
#pragma omp target map(tofrom: offdev)
  offdev = omp_is_initial_device();
  if (offdev) FAIL("target region ran on the host");
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  int a[100], b = 0;
  if (omp_target_is_present(a, dev)) FAIL("a present before mapping");
  if (!omp_target_is_present(a, host)) FAIL("is_present on the initial device must be true");
#pragma omp target data map(to: a[20:30])
  {
    if (!omp_target_is_present(&a[20], dev)) FAIL("&a[20] not present");
    if (!omp_target_is_present(&a[49], dev)) FAIL("&a[49] not present");
    if (omp_target_is_present(&a[50], dev)) FAIL("&a[50] reported present");
    if (omp_target_is_present(&a[19], dev)) FAIL("&a[19] reported present");
    if (omp_target_is_present(&b, dev)) FAIL("b reported present");
  }
  if (omp_target_is_present(&a[20], dev)) FAIL("a present after target data");
  // is_accessible: always true for the initial device
  if (!omp_target_is_accessible(a, sizeof a, host)) FAIL("host memory not accessible from host");
  int acc = omp_target_is_accessible(a, sizeof a, dev);
  if (acc) {
    // If the device can access host memory, it may use it directly.
    int *p = a;
    for (int i = 0; i < 100; i++) a[i] = i;
#pragma omp target is_device_ptr(p)
    for (int i = 0; i < 100; i++) p[i] += 1;
    for (int i = 0; i < 100; i++)
      if (a[i] != i + 1) FAIL("is_accessible() said yes but device access failed at %d", i);
  }
  // device memory from omp_target_alloc is accessible from that device
  void *d = omp_target_alloc(64, dev);
  if (!d) FAIL("alloc failed");
  (void)omp_target_is_accessible(d, 64, dev);
  omp_target_free(d, dev);
  return 0;
}
