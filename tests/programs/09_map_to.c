// map(to:): device sees host values; device modifications are NOT copied back.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 64

int main(void) {
  int a[N], x = 5, sum = 0, init = -1;
  for (int i = 0; i < N; i++) a[i] = i * 7;
#pragma omp target map(to: a, x) map(from: sum, init)
  {
    init = omp_is_initial_device();
    int s = 0;
    for (int i = 0; i < N; i++) { s += a[i]; a[i] = -1; }
    sum = s + x;
    x = 1000;
  }
  if (init != 0) FAIL("region ran on host");
  int want = 0;
  for (int i = 0; i < N; i++) want += i * 7;
  if (sum != want + 5) FAIL("device did not see host values: sum=%d expected %d", sum, want + 5);
  if (x != 5) FAIL("map(to:) scalar change visible on host: x=%d", x);
  for (int i = 0; i < N; i++)
    if (a[i] != i * 7) FAIL("map(to:) array change visible on host: a[%d]=%d", i, a[i]);
  // Host changes after the region are seen by a new map(to:) region.
  for (int i = 0; i < N; i++) a[i] = 1;
#pragma omp target map(to: a) map(from: sum)
  {
    int s = 0;
    for (int i = 0; i < N; i++) s += a[i];
    sum = s;
  }
  if (sum != N) FAIL("second map(to:) did not copy fresh host data: sum=%d", sum);
  return 0;
}
