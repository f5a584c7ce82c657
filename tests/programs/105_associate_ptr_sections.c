// omp_target_associate_ptr corners: a sub-section of associated host memory maps onto the
// associated device storage at the right offset (no transfer), target data on associated
// memory neither copies in nor out, disassociate inside that target data region leaves the
// region end harmless, and associating memory that is already mapped fails.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 32

int main(void) {
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  int offdev = 0;
  int *h = malloc(N * sizeof(int));
  for (int i = 0; i < N; i++) h[i] = i;
  int *d = omp_target_alloc(N * sizeof(int), dev);
  int init[N];
  for (int i = 0; i < N; i++) init[i] = 100 + i;
  omp_target_memcpy(d, init, sizeof init, 0, 0, dev, host);
  if (omp_target_associate_ptr(h, d, N * sizeof(int), 0, dev)) FAIL("associate failed");
  if (omp_get_mapped_ptr(h + 5, dev) != (void *)(d + 5)) FAIL("mapped ptr of h+5 is not d+5");
  long where = 0;
  int v = 0;
#pragma omp target map(tofrom: h[4:8]) map(from: where, v) map(tofrom: offdev)
  {
    offdev |= omp_is_initial_device();
    where = (long)&h[4];
    v = h[5];
    h[6] = -6;
  }
  if (offdev) FAIL("region ran on the host");
  if ((int *)where != d + 4) FAIL("&h[4] on device %p, expected d+4 %p", (void *)where, (void *)(d + 4));
  if (v != 105) FAIL("h[5] on device %d, expected associated value 105", v);
  if (h[6] != 6) FAIL("associated section copied back: h[6]=%d", h[6]);
  // the same host memory cannot be associated again with other storage
  int *d2 = omp_target_alloc(N * sizeof(int), dev);
  if (omp_target_associate_ptr(h, d2, N * sizeof(int), 0, dev) == 0) FAIL("second association with other storage succeeded");
  // memory that is mapped by a map clause cannot be associated
  int *m = malloc(N * sizeof(int));
#pragma omp target enter data map(alloc: m[0:N])
  if (omp_target_associate_ptr(m, d2, N * sizeof(int), 0, dev) == 0) FAIL("associating mapped memory succeeded");
#pragma omp target exit data map(delete: m[0:N])
  // target data on associated memory; disassociate inside it
#pragma omp target data map(tofrom: h[0:N])
  {
#pragma omp target
    h[0] = 4242;
    if (omp_target_disassociate_ptr(h, dev)) FAIL("disassociate inside target data failed");
    if (omp_target_is_present(h, dev)) FAIL("h still present after disassociate");
  }
  if (h[0] != 0) FAIL("end of target data copied from the disassociated storage: h[0]=%d", h[0]);
  int chk = 0;
  omp_target_memcpy(&chk, d, sizeof chk, 0, 0, host, dev);
  if (chk != 4242) FAIL("device storage d[0]=%d, expected 4242", chk);
  // after disassociation a map allocates fresh storage and transfers
#pragma omp target map(tofrom: h[0:N]) map(from: where)
  { where = (long)h; h[1] += 1; }
  if ((int *)where == d) FAIL("map after disassociation still used the associated storage");
  if (h[1] != 2) FAIL("map after disassociation: h[1]=%d expected 2", h[1]);
  omp_target_free(d, dev);
  omp_target_free(d2, dev);
  free(h); free(m);
  return 0;
}
