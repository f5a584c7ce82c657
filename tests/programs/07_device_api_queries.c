// omp_get_num_devices, omp_get_initial_device, omp_get_device_num (host), default device get/set.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int nd = omp_get_num_devices();
  if (nd < 1) FAIL("omp_get_num_devices()=%d", nd);
  if (omp_get_initial_device() != nd)
    FAIL("omp_get_initial_device()=%d, expected omp_get_num_devices()=%d", omp_get_initial_device(), nd);
  if (omp_get_device_num() != omp_get_initial_device())
    FAIL("omp_get_device_num() on host=%d, expected %d", omp_get_device_num(), omp_get_initial_device());
  if (!omp_is_initial_device()) FAIL("omp_is_initial_device() on host returned 0");
  int def0 = omp_get_default_device(); // initial value is implementation defined
  if (def0 < 0 || def0 > nd) FAIL("omp_get_default_device()=%d is not a valid device number", def0);
  int target = nd - 1;
  omp_set_default_device(target);
  if (omp_get_default_device() != target) FAIL("omp_set_default_device(%d) not reflected", target);
  int x = 7, init = -1;
  // Constructs without device() now use device 'target'.
#pragma omp target enter data map(to: x)
  if (!omp_target_is_present(&x, target)) FAIL("enter data did not map x on default device %d", target);
  if (target != 0 && omp_target_is_present(&x, 0)) FAIL("enter data mapped x on device 0, default is %d", target);
#pragma omp target map(from: init) map(tofrom: x)
  {
    init = omp_is_initial_device();
    x = 8; // x is present on the default device: modifies the device copy only
  }
  if (init != 0) FAIL("region ran on host");
  if (x != 7) FAIL("host x modified (x=%d): region did not use the present copy", x);
#pragma omp target exit data map(from: x) device(target)
  if (x != 8) FAIL("x=%d after exit data from default device, expected 8", x);
  omp_set_default_device(def0);
  if (omp_get_default_device() != def0) FAIL("omp_set_default_device(%d) not reflected", def0);
  return 0;
}
