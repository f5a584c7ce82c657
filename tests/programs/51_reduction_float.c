// Reductions on float and double: + * min max (values chosen so results are exact).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 4096

int main(void) {
  float fs = 0.0f, fp = 1.0f, fmn = 1e30f, fmx = -1e30f;
  double ds = 0.0, dp = 1.0, dmn = 1e300, dmx = -1e300;
  int init = -1;
#pragma omp target teams distribute parallel for map(from: init) \
    reduction(+: fs, ds) reduction(*: fp, dp) reduction(min: fmn, dmn) reduction(max: fmx, dmx)
  for (int i = 0; i < N; i++) {
    if (i == 0) init = omp_is_initial_device();
    fs += 0.5f;                 // exact in any order
    ds += (double)i;            // integers: exact
    if (i % 512 == 0) { fp *= 2.0f; dp *= 0.5; }
    float fv = (float)((i * 7919) % N) - 1000.0f;
    double dv = (double)((i * 104729) % N) * 0.25;
    fmn = fv < fmn ? fv : fmn;
    fmx = fv > fmx ? fv : fmx;
    dmn = dv < dmn ? dv : dmn;
    dmx = dv > dmx ? dv : dmx;
  }
  if (init != 0) FAIL("region ran on host");
  if (fs != 0.5f * N) FAIL("float +: %g", fs);
  if (ds != (double)N * (N - 1) / 2) FAIL("double +: %g", ds);
  if (fp != 256.0f) FAIL("float *: %g", fp);
  if (dp != 1.0 / 256.0) FAIL("double *: %g", dp);
  if (fmn != -1000.0f || fmx != (float)(N - 1) - 1000.0f) FAIL("float min/max: %g %g", fmn, fmx);
  if (dmn != 0.0 || dmx != (N - 1) * 0.25) FAIL("double min/max: %g %g", dmn, dmx);
  // min/max clauses with explicit fmin-style expressions, target parallel for
  double lo = 5.0, hi = -5.0;
#pragma omp target parallel for reduction(min: lo) reduction(max: hi)
  for (int i = 0; i < 100; i++) {
    double v = (i - 50) * 0.125;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo != -6.25 || hi != 6.125) FAIL("min/max with initial values: %g %g", lo, hi);
  return 0;
}
