// Device memory routines applied to the initial (host) device number.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int host = omp_get_initial_device(), dev = omp_get_default_device();
  int x = 3, y = 0;
  // omp_target_alloc on the initial device gives host-accessible memory
  int *h = omp_target_alloc(16 * sizeof(int), host);
  if (!h) FAIL("omp_target_alloc on initial device returned NULL");
  for (int i = 0; i < 16; i++) h[i] = i;
  if (h[15] != 15) FAIL("initial-device allocation not usable on host");
  // memcpy host<->host via the API, with offsets
  int src[4] = {9, 8, 7, 6};
  if (omp_target_memcpy(h, src, sizeof src, 4 * sizeof(int), 0, host, host)) FAIL("host->host memcpy failed");
  if (h[3] != 3 || h[4] != 9 || h[7] != 6 || h[8] != 8) FAIL("host->host memcpy with offset wrong");
  omp_target_free(h, host);
  // is_present / mapped_ptr / is_accessible on the initial device
  if (!omp_target_is_present(&x, host)) FAIL("omp_target_is_present(host) false");
  if (omp_get_mapped_ptr(&x, host) != (void *)&x) FAIL("omp_get_mapped_ptr(host) != host address");
  if (!omp_target_is_accessible(&x, sizeof x, host)) FAIL("omp_target_is_accessible(host) false");
  // memset on the initial device
  char buf[8];
  memset(buf, 1, sizeof buf);
  if (omp_target_memset(buf, 0x33, 4, host) != buf) FAIL("memset(host) return value");
  if (buf[3] != 0x33 || buf[4] != 1) FAIL("memset(host) wrote wrong bytes");
  // target region with device(host) runs on the host and uses host storage (no mapping)
  int init = -1;
#pragma omp target device(host) map(to: y) map(from: init)
  { init = omp_is_initial_device(); y = x; }
  if (init != 1) FAIL("device(initial) region reported device execution");
  if (y != 3) FAIL("device(initial) region did not operate on host storage: y=%d", y);
  // omp_get_mapped_ptr on an unmapped address of a real device is NULL
  if (omp_get_mapped_ptr(&x, dev) != NULL) FAIL("unmapped x has device mapping");
#pragma omp target map(from: init)
  init = omp_is_initial_device();
  if (init != 0) FAIL("region ran on host");
  return 0;
}
