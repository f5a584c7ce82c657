// Target regions in callees find data mapped by callers through pointer parameters
// (address-range lookup), including interior pointers into a mapped block.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 1000

static void scale(double *v, int n, double f) {
#pragma omp target teams distribute parallel for map(tofrom: v[0:n])
  for (int i = 0; i < n; i++) v[i] *= f + 1000.0 * omp_is_initial_device(); // host run => wrong values
}
static double sum(const double *v, int n) {
  double s = 0;
#pragma omp target map(to: v[0:n]) map(tofrom: s)
  for (int i = 0; i < n; i++) s += v[i];
  return s;
}

int main(void) {
  double *a = malloc(N * sizeof(double));
  for (int i = 0; i < N; i++) a[i] = 1.0;
#pragma omp target data map(tofrom: a[0:N])
  {
    scale(a, N, 2.0);          // whole block
    scale(a + 100, 50, 10.0);  // interior sub-block [100,150)
    scale(&a[900], 100, 0.5);  // tail
    double s = sum(a, N);
    double want = 2.0 * 800 + 20.0 * 50 + 1.0 * 100 + 2.0 * 50;
    if (s != want) FAIL("device sum=%g expected %g", s, want);
    if (a[0] != 1.0) FAIL("data copied back early");
  }
  for (int i = 0; i < N; i++) {
    double want = (i >= 100 && i < 150) ? 20.0 : (i >= 900 ? 1.0 : 2.0);
    if (a[i] != want) FAIL("a[%d]=%g expected %g", i, a[i], want);
  }
  // without an enclosing mapping each call maps/unmaps on its own
  scale(a, N, 3.0);
  if (a[0] != 6.0 || a[999] != 3.0) FAIL("standalone calls: a[0]=%g a[999]=%g", a[0], a[999]);
  free(a);
  return 0;
}
