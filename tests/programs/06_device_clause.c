// device(n) clause: each available device runs the region with its own copy of mapped data.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int nd = omp_get_num_devices();
  if (nd < 1) FAIL("omp_get_num_devices()=%d, expected >= 1", nd);
  for (int d = 0; d < nd; d++) {
    int init = -1, v = d * 10;
#pragma omp target device(d) map(from: init) map(tofrom: v)
    {
      init = omp_is_initial_device();
      v += 1;
    }
    if (init != 0) FAIL("device(%d): region ran on the host", d);
    if (v != d * 10 + 1) FAIL("device(%d): v=%d", d, v);
  }
  // Each device has its own data environment: map y on every device with a
  // different value, modify on each device, then read each back.
  int y = 0;
  for (int d = 0; d < nd; d++) {
    y = 100 + d;
#pragma omp target enter data map(to: y) device(d)
  }
  for (int d = 0; d < nd; d++)
    if (!omp_target_is_present(&y, d)) FAIL("y not present on device %d", d);
  for (int d = 0; d < nd; d++) {
#pragma omp target device(d) map(tofrom: y)
    y = y * 2; // present: no copy in or out
  }
  if (y != 100 + nd - 1) FAIL("host y changed by present-mapped regions: %d", y);
  for (int d = 0; d < nd; d++) {
#pragma omp target exit data map(from: y) device(d)
    if (y != 2 * (100 + d)) FAIL("device %d: y=%d after exit data from, expected %d", d, y, 2 * (100 + d));
    if (omp_target_is_present(&y, d)) FAIL("y still present on device %d", d);
  }
  // device(initial device) runs on the host
  int init = -1, idev = omp_get_initial_device();
#pragma omp target device(idev) map(from: init)
  init = omp_is_initial_device();
  if (init != 1) FAIL("device(omp_get_initial_device()) did not run on host (init=%d)", init);
  return 0;
}
