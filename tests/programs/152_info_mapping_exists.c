// ENV: LIBOMPTARGET_INFO=2
// CFLAGS: -g
// EXPECT-STDERR-BOTH: omptarget device 0 info: Mapping exists with HstPtrBegin=0x
// EXPECT-STDERR-BOTH: , Size=4, DynRefCount=2 (incremented), HoldRefCount=0, Name=x
// EXPECT-STDERR-BOTH: , Size=4, DynRefCount=1 (decremented), HoldRefCount=0
// LIBOMPTARGET_INFO=2 (existing mappings): a target construct mapping x, which enter data
// already mapped, reports the existing entry with its dynamic reference count raised to 2 at
// entry and lowered back to 1 at exit.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  if (omp_get_num_devices() < 1) FAIL("no device");
  int x = 7, init = -1;
#pragma omp target enter data map(to: x) device(0)
#pragma omp target map(tofrom: x) map(from: init) device(0)
  {
    init = omp_is_initial_device();
    x++;
  }
  if (init != 0) FAIL("region ran on the host");
  if (x != 7) FAIL("x copied back while still mapped (x=%d)", x);
#pragma omp target exit data map(from: x) device(0)
  if (x != 8) FAIL("x=%d after exit data", x);
  return 0;
}
