// ENV: OMP_DEFAULT_DEVICE=1
// OMP_DEFAULT_DEVICE selects the device used by constructs without a device clause.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int nd = omp_get_num_devices();
  if (nd < 2) {
    // With a single device, OMP_DEFAULT_DEVICE=1 names the initial device (== num devices).
    if (omp_get_default_device() != 1) FAIL("omp_get_default_device()=%d, expected 1", omp_get_default_device());
    return 0;
  }
  if (omp_get_default_device() != 1) FAIL("omp_get_default_device()=%d, expected 1 from OMP_DEFAULT_DEVICE", omp_get_default_device());
  int a[16];
  for (int i = 0; i < 16; i++) a[i] = i;
#pragma omp target enter data map(to: a)
  if (!omp_target_is_present(a, 1)) FAIL("enter data did not map on device 1");
  if (omp_target_is_present(a, 0)) FAIL("enter data mapped on device 0");
  int init = -1;
#pragma omp target map(from: init)
  {
    init = omp_is_initial_device();
    for (int i = 0; i < 16; i++) a[i] += 100; // uses the present copy on device 1
  }
  if (init != 0) FAIL("region ran on host");
  if (a[0] != 0) FAIL("present copy on default device not used (host a[0]=%d)", a[0]);
#pragma omp target exit data map(from: a) device(1)
  for (int i = 0; i < 16; i++)
    if (a[i] != i + 100) FAIL("a[%d]=%d", i, a[i]);
  // an explicit device clause still overrides the default
#pragma omp target enter data map(to: a) device(0)
  if (!omp_target_is_present(a, 0) || omp_target_is_present(a, 1)) FAIL("device(0) override wrong");
#pragma omp target exit data map(delete: a) device(0)
  return 0;
}
