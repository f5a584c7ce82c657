// target update to / from on mapped data.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 40

int main(void) {
  int offdev = 0;
  int a[N], s = 0;
  for (int i = 0; i < N; i++) a[i] = i;
#pragma omp target data map(to: a)
  {
    for (int i = 0; i < N; i++) a[i] = 100 + i;
#pragma omp target map(from: s) map(tofrom: offdev)
    {
      offdev |= omp_is_initial_device();
      { s = 0; for (int i = 0; i < N; i++) s += a[i]; }
    }
    if (offdev) FAIL("target region ran on the host");
    if (s != N * (N - 1) / 2) FAIL("device saw host change without update: s=%d", s);
#pragma omp target update to(a)
#pragma omp target map(from: s)
    { s = 0; for (int i = 0; i < N; i++) s += a[i]; }
    if (s != 100 * N + N * (N - 1) / 2) FAIL("target update to did not transfer: s=%d", s);
#pragma omp target
    for (int i = 0; i < N; i++) a[i] = -i;
    if (a[5] != 105) FAIL("device write visible before update from");
#pragma omp target update from(a[10:5])
    for (int i = 0; i < N; i++) {
      int want = (i >= 10 && i < 15) ? -i : 100 + i;
      if (a[i] != want) FAIL("partial update from: a[%d]=%d expected %d", i, a[i], want);
    }
    a[20] = 5000;
#pragma omp target update to(a[20:1])
#pragma omp target update from(a)
    for (int i = 0; i < N; i++) {
      int want = i == 20 ? 5000 : -i;
      if (a[i] != want) FAIL("update to(a[20:1]) then from: a[%d]=%d", i, a[i]);
    }
  }
  // update on data that is not mapped is a no-op (no error)
  int u = 3;
#pragma omp target update to(u)
#pragma omp target update from(u)
  if (u != 3) FAIL("update of unmapped u changed it");
  // update with if(false) does nothing
  int b = 1, cond = 0;
#pragma omp target enter data map(to: b)
  b = 2;
#pragma omp target update to(b) if(cond)
#pragma omp target map(from: s)
  s = b; // b is firstprivate here: host value; use map to read device copy
#pragma omp target map(tofrom: b) map(from: s)
  s = b;
  if (s != 1) FAIL("update if(0) transferred (device b=%d)", s);
#pragma omp target exit data map(delete: b)
  return 0;
}
