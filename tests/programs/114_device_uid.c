// OpenMP 6.0 device UIDs (LLVM 22 implements them): every device number, the initial device
// included, has a distinct non-NULL UID that maps back to it; an unknown UID and NULL give
// omp_invalid_device (the value omp.h defines); omp_invalid_device has no UID (NULL).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int n = omp_get_num_devices();
  const char *uids[64];
  if (n + 1 > 64) n = 63;
  for (int d = 0; d <= n; d++) {
    int dev = d == n ? omp_get_initial_device() : d;
    uids[d] = omp_get_uid_from_device(dev);
    if (!uids[d]) FAIL("omp_get_uid_from_device(%d) returned NULL", dev);
    int back = omp_get_device_from_uid(uids[d]);
    if (back != dev) FAIL("omp_get_device_from_uid(\"%s\")=%d, expected %d", uids[d], back, dev);
    for (int e = 0; e < d; e++)
      if (strcmp(uids[e], uids[d]) == 0) FAIL("devices %d and %d share the UID \"%s\"", e, dev, uids[d]);
  }
  int bad = omp_get_device_from_uid("no-such-device-uid");
  if (bad != omp_invalid_device) FAIL("omp_get_device_from_uid(unknown)=%d, expected omp_invalid_device (%d)", bad, omp_invalid_device);
  bad = omp_get_device_from_uid(NULL);
  if (bad != omp_invalid_device) FAIL("omp_get_device_from_uid(NULL)=%d, expected omp_invalid_device (%d)", bad, omp_invalid_device);
  if (omp_get_uid_from_device(omp_invalid_device) != NULL) FAIL("omp_get_uid_from_device(omp_invalid_device) is not NULL");
  // a UID copied to other storage still identifies its device
  if (n > 0) {
    char copy[256];
    snprintf(copy, sizeof copy, "%s", uids[0]);
    if (omp_get_device_from_uid(copy) != 0) FAIL("a copy of device 0's UID does not identify device 0");
  }
  return 0;
}
