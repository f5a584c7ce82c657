// target if(false): region runs on the host, operating on the host data directly.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int x = 1, init = -1, cond = 0;
#pragma omp target if(cond) map(to: x) map(from: init)
  {
    init = omp_is_initial_device();
    x = 99; // host execution: no copy, so host x changes despite map(to:)
  }
  if (init != 1) FAIL("if(false) target region did not run on the host");
  if (x != 99) FAIL("if(false) region should modify host x directly, x=%d", x);
  x = 1;
  cond = 1;
#pragma omp target if(cond) map(to: x) map(from: init)
  {
    init = omp_is_initial_device();
    x = 99;
  }
  if (init != 0) FAIL("if(true) target region did not run on the device");
  if (x != 1) FAIL("map(to:) change visible on host after device region, x=%d", x);
  // if(target: 0) on a combined construct
  int a[8] = {0};
#pragma omp target teams distribute parallel for if(target: 0) map(tofrom: a)
  for (int i = 0; i < 8; i++) a[i] = omp_is_initial_device() ? i + 1 : -1;
  for (int i = 0; i < 8; i++)
    if (a[i] != i + 1) FAIL("if(target:0) combined region: a[%d]=%d", i, a[i]);
  return 0;
}
