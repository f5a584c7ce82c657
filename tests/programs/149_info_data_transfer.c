// ENV: LIBOMPTARGET_INFO=32
// CFLAGS: -g
// EXPECT-STDERR-BOTH: omptarget device 0 info: Copying data from host to device, HstPtr=0x
// EXPECT-STDERR-BOTH: omptarget device 0 info: Copying data from device to host, TgtPtr=0x
// EXPECT-STDERR-BOTH: , Size=4, Name=x
// LIBOMPTARGET_INFO=32 (data transfers): a target construct with map(tofrom: x) reports the copy
// of x to the device at entry and back at exit, with the 4-byte size and the variable's name
// (from the -g map names) on stderr.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  if (omp_get_num_devices() < 1) FAIL("no device");
  int x = 1;
#pragma omp target map(tofrom: x) device(0)
  { x = x + 41 + omp_is_initial_device(); }
  if (x != 42) FAIL("x=%d", x);
  return 0;
}
