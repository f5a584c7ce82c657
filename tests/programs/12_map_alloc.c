// map(alloc:): storage is allocated but host data is not copied in or out.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 256

static unsigned pat(int i) { return 2654435761u * (unsigned)i + 0x5A5A1234u; }

int main(void) {
  unsigned a[N];
  int matches = -1, init = -1;
  for (int i = 0; i < N; i++) a[i] = pat(i);
#pragma omp target enter data map(alloc: a)
  if (!omp_target_is_present(a, omp_get_default_device())) FAIL("alloc-mapped array not present");
#pragma omp target map(from: matches, init)
  {
    init = omp_is_initial_device();
    int m = 0;
    for (int i = 0; i < N; i++) m += (a[i] == 2654435761u * (unsigned)i + 0x5A5A1234u);
    matches = m;
    for (int i = 0; i < N; i++) a[i] = 3; // write the device copy
  }
  if (init != 0) FAIL("region ran on host");
  if (matches == N) FAIL("map(alloc:) copied host data to the device");
  for (int i = 0; i < N; i++)
    if (a[i] != pat(i)) FAIL("device write visible on host while mapped: a[%d]", i);
  // target with map(alloc:) on present data, then exit with release: no copy back.
#pragma omp target map(alloc: a)
  a[0] = 77;
#pragma omp target exit data map(release: a)
  if (a[0] != pat(0)) FAIL("alloc/release copied device data back: a[0]=%u", a[0]);
  if (omp_target_is_present(a, omp_get_default_device())) FAIL("array still present after release");
  // Structured region with map(alloc:): device writes never reach the host.
  int s = 9;
#pragma omp target map(alloc: s)
  s = 10;
  if (s != 9) FAIL("map(alloc:) scalar copied back: s=%d", s);
  return 0;
}
