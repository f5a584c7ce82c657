// assert() with true expressions inside target regions (generic and SPMD kernels, and in a
// declare target function): it must compile, link and run without stopping the program (the
// device side of assert is __assert_fail on glibc hosts and __assert_fail/__assertfail-style
// routines on GPUs; with a true expression none is called, but the call must still resolve).
// The expressions depend on run-time values, so the compiler cannot remove the checks.
#undef NDEBUG
#include <assert.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 256

#pragma omp declare target
static int checked_square(int v) {
  assert(v >= 0 && v < N && "index in range");
  return v * v;
}
#pragma omp end declare target

int main(int argc, char **argv) {
  (void)argv;
  int x = 42 + (argc > 100), n = N - (argc > 100);
  int out[N], ondev = 0, seen = -1, ondev2 = 0;
  for (int i = 0; i < N; i++) out[i] = -1;

#pragma omp target map(tofrom: ondev, seen) firstprivate(x)
  {
    ondev = !omp_is_initial_device();
    assert(x == 42);
    assert(!omp_is_initial_device());
    seen = x;
  }
#pragma omp target teams distribute parallel for map(tofrom: out, ondev2) firstprivate(n)
  for (int i = 0; i < n; i++) {
    assert(i >= 0 && i < n);
    if (i == 0) ondev2 = !omp_is_initial_device();
    out[i] = checked_square(i);
  }
  if (!ondev || !ondev2) FAIL("target region ran on the host");
  if (seen != 42) FAIL("generic region after assert: x %d, expected 42", seen);
  for (int i = 0; i < N; i++)
    if (out[i] != i * i) FAIL("out[%d] = %d after asserts, expected %d", i, out[i], i * i);
  return 0;
}
