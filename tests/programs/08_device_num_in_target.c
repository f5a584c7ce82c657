// LLVM-REF: fails (host plugin: omp_get_device_num() inside a target region returns the initial-device number)
// omp_get_device_num() inside a target region returns the number of the executing device (OpenMP 5.2 18.7.5).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int nd = omp_get_num_devices();
  if (nd < 1) FAIL("no devices");
  if (omp_get_device_num() != omp_get_initial_device()) FAIL("host omp_get_device_num() != initial device");
  for (int d = 0; d < nd; d++) {
    int got = -1, init = -1;
#pragma omp target device(d) map(from: got, init)
    { got = omp_get_device_num(); init = omp_is_initial_device(); }
    if (init != 0) FAIL("device(%d): region ran on the host", d);
    if (got != d) FAIL("device(%d): omp_get_device_num() inside returned %d", d, got);
  }
  return 0;
}
