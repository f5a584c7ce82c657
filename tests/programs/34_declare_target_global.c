// declare target global variables: separate device copy, always present, initialized from
// the static initializer; map clauses do not transfer, target update does.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int g = 5;
double gd[4] = {1.5, 2.5, 3.5, 4.5};
#pragma omp declare target to(g, gd)

int main(void) {
  int dev = omp_get_default_device();
  if (!omp_target_is_present(&g, dev)) FAIL("declare target global g not present on device");
  int seen = -1, init = -1;
  g = 10; // host copy only
#pragma omp target map(from: seen, init)
  {
    init = omp_is_initial_device();
    seen = g;
    g += 1;
  }
  if (init != 0) FAIL("region ran on host");
  if (seen != 5) FAIL("device g=%d, expected static initializer value 5", seen);
  if (g != 10) FAIL("host g changed by device region: %d", g);
  // map(tofrom:) of a declare target variable: already present, no transfer
#pragma omp target map(tofrom: g) map(from: seen)
  { seen = g; g = 100; }
  if (seen != 6) FAIL("map(tofrom: g) transferred host value to device (device saw %d)", seen);
  if (g != 10) FAIL("map(tofrom: g) copied back: host g=%d", g);
#pragma omp target update from(g)
  if (g != 100) FAIL("target update from(g): g=%d expected 100", g);
  g = 7;
#pragma omp target update to(g)
#pragma omp target map(from: seen)
  seen = g;
  if (seen != 7) FAIL("target update to(g): device g=%d", seen);
  // declare target variables have an infinite reference count: exit data does not remove them
#pragma omp target exit data map(delete: g)
  if (!omp_target_is_present(&g, dev)) FAIL("map(delete:) removed a declare target global");
#pragma omp target map(from: seen)
  seen = g;
  if (seen != 7) FAIL("declare target g changed after exit data delete: %d", seen);
  double s = 0;
#pragma omp target map(tofrom: s)
  for (int i = 0; i < 4; i++) { s += gd[i]; gd[i] = 0; }
  if (s != 12.0) FAIL("device gd sum=%g expected 12", s);
  if (gd[0] != 1.5) FAIL("host gd changed");
#pragma omp target update from(gd[1:2])
  if (gd[0] != 1.5 || gd[1] != 0 || gd[2] != 0 || gd[3] != 4.5) FAIL("partial update from(gd[1:2]) wrong");
  return 0;
}
