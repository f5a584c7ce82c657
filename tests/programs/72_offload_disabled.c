// ENV: OMP_TARGET_OFFLOAD=disabled
// With offload disabled, target regions run on the host and still compute correctly.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 1000

int main(void) {
  int init = -1, a[N];
  long s = 0;
  for (int i = 0; i < N; i++) a[i] = i;
#pragma omp target map(from: init)
  init = omp_is_initial_device();
  if (init != 1) FAIL("OMP_TARGET_OFFLOAD=disabled but region ran on a device");
#pragma omp target teams distribute parallel for map(tofrom: a) reduction(+: s)
  for (int i = 0; i < N; i++) { a[i] *= 2; s += a[i]; }
  if (s != (long)N * (N - 1)) FAIL("reduction=%ld", s);
  for (int i = 0; i < N; i++)
    if (a[i] != 2 * i) FAIL("a[%d]=%d", i, a[i]);
  // with no device, map(to:) regions share host storage: the write is visible
  int x = 1;
#pragma omp target map(to: x)
  x = 2;
  if (x != 2) FAIL("host fallback region did not operate on host storage (x=%d)", x);
  // target data / enter / exit / update are harmless no-ops
  int y = 3;
#pragma omp target data map(tofrom: y)
  {
#pragma omp target update to(y)
    y = 4;
  }
#pragma omp target enter data map(to: y)
#pragma omp target exit data map(from: y)
  if (y != 4) FAIL("y=%d", y);
  if (omp_get_num_devices() != 0) FAIL("omp_get_num_devices()=%d with offload disabled", omp_get_num_devices());
  if (omp_get_initial_device() != omp_get_num_devices()) FAIL("initial device != num devices");
  return 0;
}
