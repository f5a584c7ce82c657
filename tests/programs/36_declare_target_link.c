// declare target link: device storage only when mapped; map clauses transfer data.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 1000

int big[N];
double lk = 2.0;
#pragma omp declare target link(big, lk)

#pragma omp declare target
static int sum_big(int n) { int s = 0; for (int i = 0; i < n; i++) s += big[i]; return s; }
#pragma omp end declare target

int main(void) {
  for (int i = 0; i < N; i++) big[i] = i;
  int s = -1, init = -1;
#pragma omp target map(tofrom: big) map(from: s, init)
  {
    init = omp_is_initial_device();
    s = sum_big(N);
    for (int i = 0; i < N; i++) big[i] = 2 * i;
  }
  if (init != 0) FAIL("region ran on host");
  if (s != N * (N - 1) / 2) FAIL("device sum of link array=%d", s);
  for (int i = 0; i < N; i++)
    if (big[i] != 2 * i) FAIL("link array not copied back: big[%d]=%d", i, big[i]);
  // map(to:) only: device changes not visible
#pragma omp target map(to: big) map(from: s)
  { big[0] = 99; s = sum_big(N); }
  if (big[0] != 0) FAIL("map(to:) link array copied back");
  if (s != N * (N - 1) + 99) FAIL("sum=%d", s);
  // link scalar, unstructured mapping, update
#pragma omp target enter data map(to: lk)
  lk = 5.0;
#pragma omp target map(from: s)
  s = (int)(lk * 10); // device copy 2.0
  if (s != 20) FAIL("device lk*10=%d expected 20", s);
#pragma omp target update to(lk)
#pragma omp target
  lk += 1.0;
#pragma omp target exit data map(from: lk)
  if (lk != 6.0) FAIL("lk=%g expected 6", lk);
  return 0;
}
