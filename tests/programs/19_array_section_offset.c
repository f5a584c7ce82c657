// Array sections with non-zero start: only the section is mapped/transferred.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 100

int main(void) {
  int offdev = 0;
  int dev = omp_get_default_device();
  int a[N];
  for (int i = 0; i < N; i++) a[i] = i;
#pragma omp target map(tofrom: a[10:20]) map(tofrom: offdev)
  {
    offdev |= omp_is_initial_device();
    for (int i = 10; i < 30; i++) a[i] = -a[i];
  }
  if (offdev) FAIL("target region ran on the host");
  for (int i = 0; i < N; i++) {
    int want = (i >= 10 && i < 30) ? -i : i;
    if (a[i] != want) FAIL("a[%d]=%d expected %d", i, a[i], want);
  }
  for (int i = 0; i < N; i++) a[i] = i;
#pragma omp target enter data map(to: a[40:10])
  if (!omp_target_is_present(&a[40], dev) || !omp_target_is_present(&a[49], dev))
    FAIL("section a[40:10] not present");
  if (omp_target_is_present(&a[39], dev) || omp_target_is_present(&a[50], dev))
    FAIL("elements outside the section reported present");
  // sub-section of a present section: uses the existing mapping (no transfer)
  a[42] = 1000;
#pragma omp target map(tofrom: a[42:3])
  a[43] += 1; // device copy: 43 -> 44
  if (a[42] != 1000 || a[43] != 43) FAIL("subsection of present data was transferred");
  int *p = &a[40];
  // pointer arithmetic: the same storage via a different base
#pragma omp target map(tofrom: p[5:2])
  p[5] = 555;
#pragma omp target exit data map(from: a[40:10])
  if (a[43] != 44) FAIL("a[43]=%d expected 44", a[43]);
  if (a[45] != 555) FAIL("a[45]=%d expected 555 (write through p[5])", a[45]);
  if (a[42] != 42) FAIL("a[42]=%d expected 42 (device value copied back)", a[42]);
  if (a[39] != 39 || a[50] != 50) FAIL("neighbours of section modified");
  // length-1 section at the last element
#pragma omp target map(tofrom: a[N-1:1])
  a[N - 1] = 7;
  if (a[N - 1] != 7) FAIL("a[N-1]=%d", a[N - 1]);
  return 0;
}
