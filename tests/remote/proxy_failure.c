// Remote offload test (build-tools/src/test/remote.rs): the test stops or kills the proxy
// once this program says "ready". With OMP_TARGET_OFFLOAD=mandatory the next target region
// must fail within the remote timeout with a message naming the rank and the operation, and
// end the program with an error; with the default policy the region falls back to the host
// and the program says so and exits 0. It never hangs.
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
  if (omp_get_num_devices() < 1) {
    fprintf(stderr, "no device\n");
    return 3;
  }
  static double x[4096];
  for (int it = 0; it < 3000; it++) {
    int on_host = 0;
#pragma omp target map(tofrom: x, on_host) device(0)
    {
      on_host = omp_is_initial_device();
      for (int i = 0; i < 4096; i++) x[i] += 1.0;
    }
    if (on_host) {
      for (int i = 0; i < 4096; i++)
        if (x[i] != it + 1) {
          fprintf(stderr, "x[%d]=%g after %d regions\n", i, x[i], it + 1);
          return 5;
        }
      printf("fell back to the host at region %d\n", it);
      return 0;
    }
    if (it == 0) {
      printf("ready\n");
      fflush(stdout);
    }
    usleep(10000);
  }
  fprintf(stderr, "the proxy never failed\n");
  return 4;
}
