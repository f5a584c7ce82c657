// saxpy offloaded with `target teams distribute parallel for`; checks the result and says where
// it ran. Build and run: `cargo xtask demo`, or by hand:
//   cargo xtask cc -O2 -fopenmp-targets=x86_64-pc-linux-gnu examples/saxpy.c -o saxpy   (CPU plugin)
//   cargo xtask cc -O2 --offload-arch=sm_90 examples/saxpy.c -o saxpy                   (NVIDIA GPU)
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  const int n = 1 << 20;
  const float a = 2.0f;
  float *x = malloc(n * sizeof *x);
  float *y = malloc(n * sizeof *y);
  if (!x || !y) {
    fprintf(stderr, "saxpy: out of memory\n");
    return 1;
  }
  for (int i = 0; i < n; i++) {
    x[i] = (float)i;
    y[i] = 1.0f;
  }

  int num_devices = omp_get_num_devices();
  int device = omp_get_default_device();
  int initial = -1;
#pragma omp target teams distribute parallel for device(device) map(to: x[0:n]) map(tofrom: y[0:n]) map(tofrom: initial)
  for (int i = 0; i < n; i++) {
    if (i == 0)
      initial = omp_is_initial_device();
    y[i] = a * x[i] + y[i];
  }

  int errors = 0;
  for (int i = 0; i < n; i++)
    if (y[i] != a * (float)i + 1.0f) // exact: every value is an integer below 2^24
      errors++;

  printf("saxpy: n = %d, omp_get_num_devices() = %d, default device %d\n", n, num_devices, device);
  if (initial == 0)
    printf("saxpy: ran on offload device %d of %d (omp_is_initial_device() = 0 in the region)\n", device, num_devices);
  else
    printf("saxpy: ran on the host, the initial device (omp_is_initial_device() = %d in the region)\n", initial);
  if (errors) {
    printf("saxpy: FAILED, %d wrong elements (y[1] = %g, expected %g)\n", errors, y[1], a * 1.0f + 1.0f);
    return 1;
  }
  printf("saxpy: result OK\n");
  free(x);
  free(y);
  return 0;
}
