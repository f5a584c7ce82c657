// has_device_addr (OpenMP 5.1): list items already have device addresses.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 64

int main(void) {
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  int arr[N];
  for (int i = 0; i < N; i++) arr[i] = i;
  int init = -1;
#pragma omp target data map(tofrom: arr)
  {
#pragma omp target data use_device_addr(arr)
    {
#pragma omp target has_device_addr(arr) map(from: init)
      {
        init = omp_is_initial_device();
        for (int i = 0; i < N; i++) arr[i] *= 2;
      }
    }
    if (arr[5] != 5) FAIL("host arr modified while mapped");
  }
  if (init != 0) FAIL("region ran on host");
  for (int i = 0; i < N; i++)
    if (arr[i] != 2 * i) FAIL("arr[%d]=%d expected %d", i, arr[i], 2 * i);
  // has_device_addr with an array section of omp_target_alloc memory
  int *d = omp_target_alloc(N * sizeof(int), dev);
  if (!d) FAIL("omp_target_alloc failed");
#pragma omp target has_device_addr(d[0:N])
  for (int i = 0; i < N; i++) d[i] = 3 * i;
  int h[N];
  if (omp_target_memcpy(h, d, sizeof h, 0, 0, host, dev)) FAIL("memcpy failed");
  for (int i = 0; i < N; i++)
    if (h[i] != 3 * i) FAIL("d[%d]=%d expected %d", i, h[i], 3 * i);
  omp_target_free(d, dev);
  return 0;
}
