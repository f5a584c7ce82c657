// Device loops: negative strides, zero-trip loops, single iteration, lastprivate, unsigned/long IVs.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 100

int main(void) {
  int offdev = 0;
  int a[N];
  for (int i = 0; i < N; i++) a[i] = 0;
  // negative stride
#pragma omp target teams distribute parallel for map(tofrom: a) map(tofrom: offdev)
  for (int i = N - 1; i >= 0; i -= 3) { a[i] += 1; if (i == N - 1) offdev = omp_is_initial_device(); }
  if (offdev) FAIL("target region ran on the host");
  for (int i = 0; i < N; i++)
    if (a[i] != ((N - 1 - i) % 3 == 0)) FAIL("negative stride: a[%d]=%d", i, a[i]);
  // zero-trip loops (lb > ub and variable bound 0)
  int n0 = 0, hits = 0, lo = 10, hi = 5;
#pragma omp target teams distribute parallel for reduction(+: hits)
  for (int i = 0; i < n0; i++) hits++;
#pragma omp target parallel for reduction(+: hits)
  for (int i = lo; i < hi; i++) hits++;
#pragma omp target parallel for reduction(+: hits)
  for (int i = hi; i > lo; i--) hits++;
  if (hits != 0) FAIL("zero-trip loops ran %d iterations", hits);
  // single iteration
  int one = 0, lastidx = -1;
#pragma omp target teams distribute parallel for reduction(+: one) map(tofrom: lastidx)
  for (int i = 41; i < 42; i++) { one++; lastidx = i; }
  if (one != 1 || lastidx != 41) FAIL("single-iteration loop: count=%d idx=%d", one, lastidx);
  // lastprivate: value from the sequentially last iteration
  int lp = -1, liv = -1;
#pragma omp target parallel for lastprivate(lp, liv) map(tofrom: lp, liv)
  for (int i = 0; i < 997; i++) { lp = i * 2; liv = i; }
  if (lp != 1992 || liv != 996) FAIL("lastprivate: lp=%d liv=%d", lp, liv);
  int lp2 = -1;
#pragma omp target teams distribute parallel for lastprivate(lp2) map(tofrom: lp2)
  for (int i = 100; i > 0; i -= 7) lp2 = i; // last iteration i = 2
  if (lp2 != 2) FAIL("lastprivate with negative step: %d", lp2);
  // loop IV value after a lastprivate'd loop variable
  int iv = -1;
#pragma omp target parallel for lastprivate(iv) map(tofrom: iv)
  for (iv = 0; iv < 50; iv += 5) { }
  if (iv != 50) FAIL("lastprivate loop variable after loop=%d expected 50", iv);
  // unsigned and long induction variables near type limits
  long cnt = 0;
#pragma omp target parallel for reduction(+: cnt)
  for (unsigned u = 4000000000u; u < 4000001000u; u++) cnt += (u & 1);
#pragma omp target parallel for reduction(+: cnt)
  for (long l = -(1L << 40); l < -(1L << 40) + 500; l += 2) cnt += 1;
  if (cnt != 500 + 250) FAIL("unsigned/long IV loops: %ld", cnt);
  return 0;
}
