// ENV: OMP_TARGET_OFFLOAD=default
// With the default policy and an available device, regions run on the device.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int nd = omp_get_num_devices();
  int init = -1, x = 1;
#pragma omp target map(from: init) map(to: x)
  {
    init = omp_is_initial_device();
    x = 5;
  }
  if (nd > 0) {
    if (init != 0) FAIL("device available (%d) but region ran on host", nd);
    if (x != 1) FAIL("map(to:) write visible on host with device execution");
  } else {
    if (init != 1) FAIL("no device but region reports device execution");
  }
  long s = 0;
#pragma omp target teams distribute parallel for reduction(+: s)
  for (int i = 1; i <= 100; i++) s += i;
  if (s != 5050) FAIL("s=%ld", s);
  return 0;
}
