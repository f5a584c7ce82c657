// use_device_addr: the list item refers to the device copy inside the region.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  int x = 5, arr[10];
  for (int i = 0; i < 10; i++) arr[i] = i;
  void *xa = NULL, *aa = NULL;
#pragma omp target data map(tofrom: x, arr)
  {
#pragma omp target data use_device_addr(x, arr)
    {
      xa = &x;
      aa = &arr[0];
    }
    if (xa == (void *)&x || aa == (void *)arr) FAIL("use_device_addr gave host addresses");
    if (xa != omp_get_mapped_ptr(&x, dev)) FAIL("&x in use_device_addr region != omp_get_mapped_ptr");
    if (aa != omp_get_mapped_ptr(arr, dev)) FAIL("&arr in use_device_addr region != omp_get_mapped_ptr");
    int v = 42;
    if (omp_target_memcpy(xa, &v, sizeof v, 0, 0, dev, host)) FAIL("memcpy to device x failed");
    int vals[10];
    for (int i = 0; i < 10; i++) vals[i] = 100 + i;
    if (omp_target_memcpy(aa, vals, sizeof vals, 0, 0, dev, host)) FAIL("memcpy to device arr failed");
    if (x != 5 || arr[3] != 3) FAIL("host copies modified by device memcpy");
    int seen = -1, onhost = -1;
#pragma omp target map(tofrom: x) map(from: seen, onhost)
    { seen = x; onhost = omp_is_initial_device(); }
    if (onhost) FAIL("target region ran on the host");
    if (seen != 42) FAIL("device x=%d after memcpy through use_device_addr address", seen);
  }
  if (x != 42) FAIL("x=%d expected 42", x);
  for (int i = 0; i < 10; i++)
    if (arr[i] != 100 + i) FAIL("arr[%d]=%d", i, arr[i]);
  // array section in use_device_addr
  double *p = malloc(16 * sizeof(double));
  void *pa = NULL;
#pragma omp target data map(to: p[4:8]) use_device_addr(p[4:8])
  pa = &p[4];
  if (pa == (void *)&p[4] || pa == NULL) FAIL("use_device_addr(p[4:8]) not translated");
  free(p);
  return 0;
}
