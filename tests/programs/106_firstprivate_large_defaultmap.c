// Large firstprivate aggregates and defaultmap variants: a 64 KiB struct and a 16 KiB array
// passed firstprivate arrive intact and device changes never return; defaultmap(tofrom: scalar)
// copies scalars back; defaultmap(firstprivate: aggregate) gives the region a private copy;
// defaultmap(none) with explicit clauses; is_device_ptr on a pointer into the middle of a
// device allocation and pointer arithmetic on it in both directions.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

struct Big { long v[8192]; int tag; char c[3]; };

int main(void) {
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  int offdev = 0;
  static struct Big big;
  for (int i = 0; i < 8192; i++) big.v[i] = i * 7;
  big.tag = 99; memcpy(big.c, "ab", 3);
  int arr[4096];
  for (int i = 0; i < 4096; i++) arr[i] = -i;
  long sum = 0;
  int tag = 0, csum = 0;
#pragma omp target firstprivate(big, arr) map(from: sum, tag, csum) map(tofrom: offdev)
  {
    offdev |= omp_is_initial_device();
    sum = 0;
    for (int i = 0; i < 8192; i++) { sum += big.v[i]; big.v[i] = 0; }
    for (int i = 0; i < 4096; i++) { sum += arr[i]; arr[i] = 1; }
    tag = big.tag;
    csum = big.c[0] + big.c[1] + big.c[2];
    big.tag = -1;
  }
  if (offdev) FAIL("region ran on the host");
  long want = 7L * 8191 * 8192 / 2 - 4095L * 4096 / 2;
  if (sum != want) FAIL("firstprivate big struct/array: sum=%ld expected %ld", sum, want);
  if (tag != 99 || csum != 'a' + 'b') FAIL("firstprivate struct tail: tag=%d csum=%d", tag, csum);
  if (big.tag != 99 || big.v[5] != 35 || arr[3] != -3) FAIL("firstprivate changes came back to the host");
  // defaultmap(tofrom: scalar)
  int x = 3; double y = 1.25; long z = 10;
#pragma omp target defaultmap(tofrom: scalar)
  { x *= 5; y *= 4; z += x; }
  if (x != 15 || y != 5.0 || z != 25) FAIL("defaultmap(tofrom: scalar): x=%d y=%g z=%ld", x, y, z);
  // defaultmap(firstprivate: aggregate): private copy, no copy back
  int agg[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  int aggsum = 0;
#pragma omp target defaultmap(firstprivate: aggregate) map(tofrom: aggsum)
  {
    for (int i = 0; i < 8; i++) { aggsum += agg[i]; agg[i] = 0; }
  }
  if (aggsum != 36) FAIL("defaultmap(firstprivate: aggregate): sum=%d", aggsum);
  if (agg[0] != 1) FAIL("defaultmap(firstprivate: aggregate) copied back");
  // defaultmap(none) with everything explicit
  int q = 2;
#pragma omp target defaultmap(none) map(tofrom: q)
  q += 40;
  if (q != 42) FAIL("defaultmap(none) map(tofrom: q): q=%d", q);
  // is_device_ptr on an interior device pointer
  int *d = omp_target_alloc(100 * sizeof(int), dev);
  int *mid = d + 50;
#pragma omp target is_device_ptr(mid)
  for (int i = -50; i < 50; i++) mid[i] = i + 50;
  int out[100];
  omp_target_memcpy(out, d, sizeof out, 0, 0, host, dev);
  for (int i = 0; i < 100; i++)
    if (out[i] != i) FAIL("is_device_ptr(d+50) with negative/positive offsets: d[%d]=%d", i, out[i]);
  int *endp = d + 100;
  int last = 0;
#pragma omp target is_device_ptr(endp) map(from: last)
  last = endp[-1] + *(endp - 100);
  if (last != 99) FAIL("is_device_ptr one-past-end pointer: %d", last);
  omp_target_free(d, dev);
  return 0;
}
