// Sub-sections of an already mapped array section: a contained section reuses the existing
// device copy (no transfer, pointer translated to the right offset), `exit data map(from:)` of
// a sub-section copies back only that sub-section once the count drops to zero, and
// `target update` of a sub-section reached through an interior pointer moves only those elements.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 100

int main(void) {
  int dev = omp_get_default_device();
  int offdev = 0;
  int *a = malloc(N * sizeof(int));
  for (int i = 0; i < N; i++) a[i] = i;
#pragma omp target enter data map(to: a[10:80])
  int *dbase = omp_get_mapped_ptr(&a[10], dev);
  if (!dbase) FAIL("a[10:80] not mapped");
  for (int i = 0; i < N; i++) a[i] = -1; // host changes, device keeps old values
  // a contained sub-section: present, so no transfer in or out
  long dev_p = 0;
  int seen = 0;
#pragma omp target map(tofrom: a[20:10]) map(from: dev_p, seen) map(tofrom: offdev)
  {
    offdev |= omp_is_initial_device();
    dev_p = (long)&a[20];
    seen = a[25];
    for (int i = 20; i < 30; i++) a[i] += 1000;
  }
  if (offdev) FAIL("target region ran on the host");
  if ((int *)dev_p != dbase + 10) FAIL("&a[20] on device %p, expected mapped base + 10 = %p", (void *)dev_p, (void *)(dbase + 10));
  if (seen != 25) FAIL("contained section was transferred again: device a[25]=%d, expected 25", seen);
  for (int i = 0; i < N; i++)
    if (a[i] != -1) FAIL("contained tofrom section copied back while still mapped: a[%d]=%d", i, a[i]);
  // interior pointer and a section relative to it
  int *q = a + 50;
#pragma omp target map(tofrom: q[0:5])
  for (int i = 0; i < 5; i++) q[i] = 5000 + i;
  // update from through the interior pointer: only q[1:2] (= a[51], a[52])
#pragma omp target update from(q[1:2])
  for (int i = 0; i < N; i++) {
    int want = (i == 51 || i == 52) ? 5000 + i - 50 : -1;
    if (a[i] != want) FAIL("update from(q[1:2]): a[%d]=%d expected %d", i, a[i], want);
  }
  // update to of a sub-section, then read back on the device
  a[60] = 600; a[61] = 601;
#pragma omp target update to(a[60:2])
  int s60 = 0, s59 = 0, s62 = 0;
#pragma omp target map(from: s60, s59, s62)
  { s60 = a[60] + a[61]; s59 = a[59]; s62 = a[62]; }
  if (s60 != 1201) FAIL("update to(a[60:2]): device sum %d", s60);
  if (s59 != 59 || s62 != 62) FAIL("update to(a[60:2]) touched neighbours: %d %d", s59, s62);
  // second reference, then exit data of sub-sections
#pragma omp target enter data map(to: a[40:10])
#pragma omp target exit data map(from: a[45:2])
  if (a[45] != -1) FAIL("exit data from a[45:2] copied back while the count was still 1");
  if (!omp_target_is_present(&a[10], dev)) FAIL("block removed while count was 1");
#pragma omp target exit data map(from: a[20:3])
  if (omp_target_is_present(&a[10], dev)) FAIL("block still present after count reached 0");
  if (omp_target_is_present(&a[89], dev)) FAIL("block tail still present");
  for (int i = 0; i < N; i++) {
    int want = -1;
    if (i >= 20 && i < 23) want = i + 1000;
    if (i == 51 || i == 52) want = 5000 + i - 50;
    if (i == 60 || i == 61) want = 540 + i;
    if (a[i] != want) FAIL("after exit data from(a[20:3]): a[%d]=%d expected %d", i, a[i], want);
  }
  free(a);
  return 0;
}
