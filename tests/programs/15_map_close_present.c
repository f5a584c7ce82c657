// map(close, ...) and map(present, ...) (success case).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 50

int main(void) {
  int a[N], init = -1;
  for (int i = 0; i < N; i++) a[i] = i;
#pragma omp target map(close, tofrom: a) map(from: init)
  {
    init = omp_is_initial_device();
    for (int i = 0; i < N; i++) a[i] *= 2;
  }
  if (init != 0) FAIL("region ran on host");
  for (int i = 0; i < N; i++)
    if (a[i] != 2 * i) FAIL("map(close,tofrom:) a[%d]=%d", i, a[i]);
  // present: data mapped beforehand, present modifier succeeds and uses existing copy.
#pragma omp target enter data map(close, to: a)
  for (int i = 0; i < N; i++) a[i] = -1;
#pragma omp target map(present, tofrom: a)
  for (int i = 0; i < N; i++) a[i] += 1; // device copy: 2i+1
  for (int i = 0; i < N; i++)
    if (a[i] != -1) FAIL("map(present,tofrom:) transferred present data: a[%d]=%d", i, a[i]);
#pragma omp target update from(a)
  for (int i = 0; i < N; i++)
    if (a[i] != 2 * i + 1) FAIL("device copy a[%d]=%d expected %d", i, a[i], 2 * i + 1);
#pragma omp target data map(present, alloc: a[10:5])
  {
#pragma omp target map(present, to: a[10:5])
    a[10] = 999;
  }
#pragma omp target exit data map(present, from: a)
  if (a[10] != 999) FAIL("present subsection write lost: a[10]=%d", a[10]);
  if (omp_target_is_present(a, omp_get_default_device())) FAIL("a still present");
  return 0;
}
