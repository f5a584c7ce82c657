// ENV: LIBOMPTARGET_INFO=64
// CFLAGS: -g
// EXPECT-STDERR-BOTH: omptarget device 0 info: variable q[0:0] does not have a valid device counterpart
// LIBOMPTARGET_INFO=64 (empty mappings): map(tofrom: q[0:0]) of a pointer whose pointee is not
// mapped gives no device storage; the runtime says so, naming the list item as written.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  if (omp_get_num_devices() < 1) FAIL("no device");
  int *q = malloc(4 * sizeof(int));
  int init = -1;
#pragma omp target map(tofrom: q[0:0]) map(from: init) device(0)
  { init = omp_is_initial_device(); }
  if (init != 0) FAIL("region ran on the host");
  free(q);
  return 0;
}
