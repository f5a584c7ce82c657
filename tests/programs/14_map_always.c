// map(always, to/from): transfers happen even when data is already present.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int offdev = 0;
  int x = 1, seen = -1;
#pragma omp target data map(to: x)
  {
    x = 2; // host change
#pragma omp target map(to: x) map(from: seen) map(tofrom: offdev)
    {
      offdev |= omp_is_initial_device();
      seen = x; // present, no transfer: device still has 1
    }
    if (offdev) FAIL("target region ran on the host");
    if (seen != 1) FAIL("map(to:) of present data transferred (seen=%d, expected 1)", seen);
#pragma omp target map(always, to: x) map(from: seen)
    seen = x;
    if (seen != 2) FAIL("map(always,to:) did not transfer (seen=%d, expected 2)", seen);
#pragma omp target map(tofrom: x)
    x = 30;
    if (x != 2) FAIL("map(tofrom:) of present data copied back (x=%d)", x);
#pragma omp target map(always, from: x)
    x += 1; // device 30 -> 31
    if (x != 31) FAIL("map(always,from:) did not copy back (x=%d, expected 31)", x);
#pragma omp target map(always, tofrom: x)
    x *= 2; // 31 -> 62
    if (x != 62) FAIL("map(always,tofrom:) x=%d, expected 62", x);
    x = 5;
  }
  if (x != 5) FAIL("outer map(to:) copied back at end (x=%d)", x);
  // always on target enter/exit data
  int a[4] = {1, 2, 3, 4};
#pragma omp target enter data map(to: a)
  a[2] = 33;
#pragma omp target enter data map(always, to: a) // refcount 2, transfer anyway
#pragma omp target map(from: seen)
  seen = a[2];
  if (seen != 33) FAIL("enter data map(always,to:) did not transfer (seen=%d)", seen);
#pragma omp target
  a[3] = 44;
#pragma omp target exit data map(always, from: a) // refcount 2->1, transfer anyway
  if (a[3] != 44) FAIL("exit data map(always,from:) did not copy back (a[3]=%d)", a[3]);
  if (!omp_target_is_present(a, omp_get_default_device())) FAIL("a removed while refcount was 1");
#pragma omp target exit data map(delete: a)
  return 0;
}
