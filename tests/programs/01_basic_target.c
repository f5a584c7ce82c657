// Basic target region: runs on the device, map(tofrom:) copies in and back.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int x = 41, on_host = -1;
  int a[16];
  for (int i = 0; i < 16; i++) a[i] = i;
#pragma omp target map(tofrom: x, a) map(from: on_host)
  {
    on_host = omp_is_initial_device();
    x += 1;
    for (int i = 0; i < 16; i++) a[i] *= 3;
  }
  if (on_host != 0) FAIL("target region did not run on the device (omp_is_initial_device()=%d)", on_host);
  if (x != 42) FAIL("x=%d after target, expected 42", x);
  for (int i = 0; i < 16; i++)
    if (a[i] != 3 * i) FAIL("a[%d]=%d, expected %d", i, a[i], 3 * i);
  if (!omp_is_initial_device()) FAIL("host code reports not initial device");
  return 0;
}
