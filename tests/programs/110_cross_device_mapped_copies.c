// The same host array mapped on two devices at once: each device has its own copy;
// omp_get_mapped_ptr of interior and last elements (and NULL one past the end); omp_target_memcpy
// and omp_target_memcpy_rect between the two devices' mapped copies at interior offsets; and
// target update from device 1 only updates from that device's copy.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 64

int main(void) {
  if (omp_get_num_devices() < 2) return 0;
  int offdev = 0;
  int a[N];
  for (int i = 0; i < N; i++) a[i] = i;
#pragma omp target enter data map(to: a) device(0)
#pragma omp target enter data map(to: a) device(1)
#pragma omp target device(1) map(tofrom: offdev)
  {
    offdev |= omp_is_initial_device();
    for (int i = 0; i < N; i++) a[i] = 1000 + i;
  }
  if (offdev) FAIL("region ran on the host");
  int *d0 = omp_get_mapped_ptr(a, 0), *d1 = omp_get_mapped_ptr(a, 1);
  if (!d0 || !d1 || d0 == d1) FAIL("mapped pointers on devices 0 and 1: %p %p", (void *)d0, (void *)d1);
  if (omp_get_mapped_ptr(&a[17], 1) != (void *)(d1 + 17)) FAIL("omp_get_mapped_ptr(&a[17], 1) != d1 + 17");
  if (omp_get_mapped_ptr(&a[N - 1], 0) != (void *)(d0 + N - 1)) FAIL("omp_get_mapped_ptr of the last element");
  if (omp_get_mapped_ptr(&a[N], 0) != NULL) FAIL("omp_get_mapped_ptr one past the end is not NULL");
  if (omp_get_mapped_ptr((char *)a + 5, 0) != (void *)((char *)d0 + 5)) FAIL("omp_get_mapped_ptr of a misaligned interior byte");
  // device 1 -> device 0: elements 10..19 (from device 1 offset 10) to device 0 offset 30
  if (omp_target_memcpy(d0, d1, 10 * sizeof(int), 30 * sizeof(int), 10 * sizeof(int), 0, 1)) FAIL("memcpy dev1->dev0 failed");
  // 2-D rect between devices: view a as 8x8; copy block rows 0..1, cols 4..7 of dev0 into rows 6..7, cols 0..3 of dev1
  size_t vol[2] = {2, 4}, dsto[2] = {6, 0}, srco[2] = {0, 4}, dims[2] = {8, 8};
  if (omp_target_memcpy_rect(d1, d0, sizeof(int), 2, vol, dsto, srco, dims, dims, 1, 0)) FAIL("memcpy_rect dev0->dev1 failed");
#pragma omp target update from(a) device(0)
  for (int i = 0; i < N; i++) {
    int want = (i >= 30 && i < 40) ? 1000 + i - 20 : i;
    if (a[i] != want) FAIL("device 0 copy after cross-device memcpy: a[%d]=%d expected %d", i, a[i], want);
  }
#pragma omp target update from(a) device(1)
  for (int i = 0; i < N; i++) {
    int r = i / 8, c = i % 8;
    int want = 1000 + i;
    if (r >= 6 && c < 4) want = (r - 6) * 8 + c + 4; // device 0's original values, rows 0..1, cols 4..7
    if (a[i] != want) FAIL("device 1 copy after memcpy_rect: a[%d]=%d expected %d", i, a[i], want);
  }
#pragma omp target exit data map(delete: a) device(0)
  if (omp_target_is_present(a, 0)) FAIL("a still on device 0");
  if (!omp_target_is_present(a, 1)) FAIL("delete on device 0 removed device 1's copy");
#pragma omp target exit data map(delete: a) device(1)
  return 0;
}
