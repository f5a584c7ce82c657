// map(from:): device results copied back at region end; no copy back while data stays mapped.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 128

int main(void) {
  int a[N], init = -1;
  for (int i = 0; i < N; i++) a[i] = -5;
#pragma omp target map(from: a) map(from: init)
  {
    init = omp_is_initial_device();
    for (int i = 0; i < N; i++) a[i] = i * i;
  }
  if (init != 0) FAIL("region ran on host");
  for (int i = 0; i < N; i++)
    if (a[i] != i * i) FAIL("map(from:) not copied back: a[%d]=%d", i, a[i]);
  // Inside an enclosing target data map(to:), an inner map(from:) finds the data
  // present: no transfer at the inner region's end, and none at the outer end.
  for (int i = 0; i < N; i++) a[i] = 1;
#pragma omp target data map(to: a)
  {
#pragma omp target map(from: a)
    for (int i = 0; i < N; i++) a[i] += 10; // device copy was initialized from host (1)
    for (int i = 0; i < N; i++)
      if (a[i] != 1) FAIL("inner map(from:) of present data copied back: a[%d]=%d", i, a[i]);
#pragma omp target update from(a)
    for (int i = 0; i < N; i++)
      if (a[i] != 11) FAIL("device copy wrong after inner region: a[%d]=%d, expected 11", i, a[i]);
    for (int i = 0; i < N; i++) a[i] = 0;
  }
  for (int i = 0; i < N; i++)
    if (a[i] != 0) FAIL("outer map(to:) copied back at end: a[%d]=%d", i, a[i]);
  return 0;
}
