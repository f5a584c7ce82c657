// With '#pragma omp requires unified_shared_memory' (the host plugin shares the host's
// memory), a map clause without 'close' makes no device copy: the region sees the host
// address and its writes reach the host at once; map(close, ...) still makes a separate copy,
// copied back only at the end of its construct; 'present' is satisfied by the shared memory;
// enter data creates no mapping (LLVM 22: omp_target_is_present answers 0 afterwards); and a
// 'declare target link' global used in a region is the host's variable.
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

#pragma omp requires unified_shared_memory

int lnk = 7;
#pragma omp declare target link(lnk)

int main(void) {
  int dev = omp_get_default_device();
  if (omp_get_num_devices() < 1) FAIL("no device");
  int x = 1, y = 1, z = 1, w = 1, init = -1;
  uintptr_t ax = 0, ay = 0, al = 0;

  // no 'close': the region works on the host's x
#pragma omp target data map(tofrom: x)
  {
#pragma omp target map(tofrom: x) map(from: ax, init)
    {
      init = omp_is_initial_device();
      ax = (uintptr_t)&x;
      x = 5;
    }
    if (init != 0) FAIL("region ran on the host");
    if (ax != (uintptr_t)&x) FAIL("map(tofrom: x) under USM: device address %#lx, host %p", (unsigned long)ax, (void *)&x);
    if (x != 5) FAIL("device write to x not visible on the host before the end of target data (x=%d)", x);
  }
  if (x != 5) FAIL("x=%d after target data", x);

  // 'close': a device copy, host unchanged until the end of the enclosing target data
#pragma omp target data map(close, tofrom: y)
  {
#pragma omp target map(tofrom: y) map(from: ay)
    {
      ay = (uintptr_t)&y;
      y = 5;
    }
    if (ay == (uintptr_t)&y) FAIL("map(close, tofrom: y) used the host address");
    if (y != 1) FAIL("map(close) copy written through to the host early (y=%d)", y);
  }
  if (y != 5) FAIL("map(close, tofrom: y) not copied back (y=%d)", y);

  // 'present' of data never mapped: shared memory is present
#pragma omp target map(present, to: z)
  { z = 3; }
  if (z != 3) FAIL("map(present, to: z) under USM: z=%d", z);

  // enter data makes no mapping
#pragma omp target enter data map(to: w)
  if (omp_target_is_present(&w, dev) != 0) FAIL("enter data under USM created a mapping for w");
#pragma omp target exit data map(delete: w)

  // declare target link: the device uses the host's variable
#pragma omp target map(from: al)
  {
    al = (uintptr_t)&lnk;
    lnk = 9;
  }
  if (al != (uintptr_t)&lnk) FAIL("link variable: device address %#lx, host %p", (unsigned long)al, (void *)&lnk);
  if (lnk != 9) FAIL("device write to the link variable not seen on the host (lnk=%d)", lnk);
  return 0;
}
