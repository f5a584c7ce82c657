// Nested target data regions: reference counting keeps data on the device; transfers
// happen only when the reference count goes 0->1 and 1->0.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 32

int main(void) {
  int dev = omp_get_default_device();
  int a[N], init = -1;
  for (int i = 0; i < N; i++) a[i] = i;
  if (omp_target_is_present(a, dev)) FAIL("a present before any mapping");
#pragma omp target data map(tofrom: a)
  {
    if (!omp_target_is_present(a, dev)) FAIL("a not present inside target data");
#pragma omp target data map(tofrom: a)
    {
#pragma omp target data map(to: a)
      {
#pragma omp target map(tofrom: a) map(from: init)
        {
          init = omp_is_initial_device();
          for (int i = 0; i < N; i++) a[i] += 1;
        }
        if (init != 0) FAIL("region ran on host");
        if (a[0] != 0) FAIL("inner region copied back while outer regions still map a");
      }
      if (!omp_target_is_present(a, dev)) FAIL("a removed after innermost data region");
      if (a[1] != 1) FAIL("middle target data end copied back early");
      a[2] = 1000; // host-only change: must not reach the device (already present)
#pragma omp target map(tofrom: a)
      for (int i = 0; i < N; i++) a[i] += 1;
    }
    if (!omp_target_is_present(a, dev)) FAIL("a removed while outer data region active");
    if (a[2] != 1000 || a[3] != 3) FAIL("host copy changed before outer region end");
  }
  if (omp_target_is_present(a, dev)) FAIL("a still present after outer target data");
  for (int i = 0; i < N; i++)
    if (a[i] != i + 2) FAIL("a[%d]=%d expected %d (final copy-back of device data)", i, a[i], i + 2);
  // target data with multiple variables and different map types
  int b[4] = {1, 1, 1, 1}, c[4] = {0, 0, 0, 0};
#pragma omp target data map(to: b) map(from: c)
  {
#pragma omp target
    for (int i = 0; i < 4; i++) { c[i] = b[i] + i; b[i] = 9; }
  }
  for (int i = 0; i < 4; i++) {
    if (b[i] != 1) FAIL("b[%d]=%d (map to copied back)", i, b[i]);
    if (c[i] != 1 + i) FAIL("c[%d]=%d", i, c[i]);
  }
  return 0;
}
