// omp_target_associate_ptr / omp_target_disassociate_ptr.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 64

int main(void) {
  int offdev = 0;
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  int h[N];
  for (int i = 0; i < N; i++) h[i] = i;
  int *d = omp_target_alloc((N + 8) * sizeof(int), dev);
  if (!d) FAIL("alloc failed");
  int init[N + 8];
  for (int i = 0; i < N + 8; i++) init[i] = 1000 + i;
  omp_target_memcpy(d, init, sizeof init, 0, 0, dev, host);
  // associate h with d + 8 ints (device_offset in bytes)
  if (omp_target_associate_ptr(h, d, N * sizeof(int), 8 * sizeof(int), dev)) FAIL("associate failed");
  if (!omp_target_is_present(h, dev)) FAIL("associated pointer not present");
  if (omp_get_mapped_ptr(h, dev) != (void *)(d + 8)) FAIL("mapped ptr != d + 8");
  // map clauses find the association: no transfers in or out
  int first = -1;
#pragma omp target map(tofrom: h) map(from: first) map(tofrom: offdev)
  {
    offdev |= omp_is_initial_device();
    first = h[0];
    h[1] = -5;
  }
  if (offdev) FAIL("target region ran on the host");
  if (first != 1008) FAIL("region saw h[0]=%d, expected associated device value 1008", first);
  if (h[1] != 1) FAIL("associated data copied back at region end");
  // target update moves data between h and the associated storage
#pragma omp target update from(h)
  if (h[0] != 1008 || h[1] != -5) FAIL("update from associated storage: %d %d", h[0], h[1]);
  h[2] = 222;
#pragma omp target update to(h[2:1])
  int chk = 0;
  omp_target_memcpy(&chk, d, sizeof(int), 0, 10 * sizeof(int), host, dev);
  if (chk != 222) FAIL("update to associated storage wrote %d", chk);
  // exit data delete does not remove an association; disassociate does
#pragma omp target exit data map(release: h)
  if (!omp_target_is_present(h, dev)) FAIL("association removed by exit data release");
  if (omp_target_disassociate_ptr(h, dev)) FAIL("disassociate failed");
  if (omp_target_is_present(h, dev)) FAIL("still present after disassociate");
  omp_target_free(d, dev);
  return 0;
}
