// EXPECT: fail
// EXPECT-STDERR: device 99
// A target region on a nonexistent device number under OMP_TARGET_OFFLOAD=mandatory is an error.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int x = 0;
  if (omp_get_num_devices() > 99) { fprintf(stderr, "too many devices for this test\n"); return 0; }
#pragma omp target device(99) map(tofrom: x)
  x = 1 + omp_is_initial_device();
  fprintf(stderr, "target device(99) did not fail (x=%d)\n", x);
  return 0;
}
