// omp_target_alloc / omp_target_free / omp_target_memcpy host->dev, dev->host, dev->dev.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 1024

int main(void) {
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  int nd = omp_get_num_devices();
  int *h = malloc(N * sizeof(int)), *h2 = malloc(N * sizeof(int));
  for (int i = 0; i < N; i++) h[i] = i * 3;
  int *d1 = omp_target_alloc(N * sizeof(int), dev);
  int *d2 = omp_target_alloc(N * sizeof(int), dev);
  if (!d1 || !d2) FAIL("omp_target_alloc failed");
  if (d1 == d2) FAIL("two allocations returned the same pointer");
  if (omp_target_memcpy(d1, h, N * sizeof(int), 0, 0, dev, host)) FAIL("memcpy h->d failed");
  h[0] = -1; // host change after copy must not matter
  if (omp_target_memcpy(d2, d1, N * sizeof(int), 0, 0, dev, dev)) FAIL("memcpy d->d failed");
  int init = -1;
#pragma omp target is_device_ptr(d2) map(from: init)
  {
    init = omp_is_initial_device();
    for (int i = 0; i < N; i++) d2[i] += 1;
  }
  if (init != 0) FAIL("region ran on host");
  memset(h2, 0, N * sizeof(int));
  if (omp_target_memcpy(h2, d2, N * sizeof(int), 0, 0, host, dev)) FAIL("memcpy d->h failed");
  for (int i = 0; i < N; i++)
    if (h2[i] != i * 3 + 1) FAIL("d2[%d]=%d expected %d", i, h2[i], i * 3 + 1);
  // d1 untouched by kernel on d2
  if (omp_target_memcpy(h2, d1, sizeof(int), 0, 0, host, dev) || h2[0] != 0) FAIL("d1 modified");
  // offsets: copy 10 ints from h[100..] into d1 at element 500, read back at offset
  for (int i = 0; i < N; i++) h[i] = -i;
  if (omp_target_memcpy(d1, h, 10 * sizeof(int), 500 * sizeof(int), 100 * sizeof(int), dev, host))
    FAIL("memcpy with offsets failed");
  int back[12];
  if (omp_target_memcpy(back, d1, 12 * sizeof(int), 0, 499 * sizeof(int), host, dev)) FAIL("memcpy back failed");
  if (back[0] != 499 * 3 || back[11] != 510 * 3) FAIL("neighbours of offset copy changed");
  for (int i = 0; i < 10; i++)
    if (back[i + 1] != -(100 + i)) FAIL("offset copy: element %d = %d", 500 + i, back[i + 1]);
  // host->host through the API
  int x = 5, y = 0;
  if (omp_target_memcpy(&y, &x, sizeof x, 0, 0, host, host) || y != 5) FAIL("memcpy host->host failed");
  // device -> other device
  if (nd > 1) {
    int *o = omp_target_alloc(N * sizeof(int), nd - 1);
    if (!o) FAIL("alloc on device %d failed", nd - 1);
    if (omp_target_memcpy(o, d2, N * sizeof(int), 0, 0, nd - 1, dev)) FAIL("cross-device memcpy failed");
    if (omp_target_memcpy(h2, o, N * sizeof(int), 0, 0, host, nd - 1)) FAIL("memcpy from device %d failed", nd - 1);
    for (int i = 0; i < N; i++)
      if (h2[i] != i * 3 + 1) FAIL("cross-device copy element %d = %d", i, h2[i]);
    omp_target_free(o, nd - 1);
  }
  omp_target_free(d1, dev);
  omp_target_free(d2, dev);
  omp_target_free(NULL, dev); // must be a no-op
  free(h); free(h2);
  return 0;
}
