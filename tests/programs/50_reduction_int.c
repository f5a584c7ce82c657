// Reductions on int and long inside target regions: + * min max && || & | ^.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 1000

int main(void) {
  int sum = 0, prod = 1, mn = 1 << 30, mx = -(1 << 30), land = 1, lor = 0, band = ~0, bor = 0, bxor = 0;
  long lsum = 0, lprod = 1, lmn = 1L << 60, lmx = -(1L << 60), lxor = 0, lband = ~0L, lbor = 0;
  int init = -1;
#pragma omp target teams distribute parallel for map(from: init) \
    reduction(+: sum, lsum) reduction(*: prod, lprod) reduction(min: mn, lmn) reduction(max: mx, lmx) \
    reduction(&&: land) reduction(||: lor) reduction(&: band, lband) reduction(|: bor, lbor) reduction(^: bxor, lxor)
  for (int i = 0; i < N; i++) {
    if (i == 0) init = omp_is_initial_device();
    sum += i;
    lsum += (long)i * 100000;
    if (i % 100 == 7) { prod *= 2; lprod *= 3; }
    mn = (i * 37 % 1001) < mn ? (i * 37 % 1001) : mn;
    mx = (i * 37 % 1001) > mx ? (i * 37 % 1001) : mx;
    lmn = ((long)i - 500) * 1000000 < lmn ? ((long)i - 500) * 1000000 : lmn;
    lmx = ((long)i - 500) * 1000000 > lmx ? ((long)i - 500) * 1000000 : lmx;
    land = land && (i < N);
    lor = lor || (i == 777);
    band &= ~(1 << (i % 7));
    bor |= 1 << (i % 13);
    bxor ^= i;
    lbor |= 1L << (i % 50);
    lband &= (i == 3) ? ~0xF0L : ~0L;
    lxor ^= (long)i << 20;
  }
  if (init != 0) FAIL("region ran on host");
  long rx = 0;
  for (int i = 0; i < N; i++) rx ^= i;
  if (sum != N * (N - 1) / 2) FAIL("+ int: %d", sum);
  if (lsum != (long)N * (N - 1) / 2 * 100000) FAIL("+ long: %ld", lsum);
  if (prod != 1 << 10) FAIL("* int: %d", prod);
  if (lprod != 59049L) FAIL("* long: %ld", lprod);
  if (mn != 0 || mx != 1000) FAIL("min/max int: %d %d", mn, mx);
  if (lmn != -500000000L || lmx != 499000000L) FAIL("min/max long: %ld %ld", lmn, lmx);
  if (land != 1 || lor != 1) FAIL("&&/||: %d %d", land, lor);
  if (band != ~0x7F) FAIL("& int: %x", band);
  if (bor != 0x1FFF) FAIL("| int: %x", bor);
  if (bxor != (int)rx) FAIL("^ int: %d expected %ld", bxor, rx);
  if (lbor != (1L << 50) - 1) FAIL("| long: %lx", lbor);
  if (lband != ~0xF0L) FAIL("& long: %lx", lband);
  if (lxor != rx << 20) FAIL("^ long: %lx", lxor);
  // false results for && and || ; reduction starting from non-identity values
  int land2 = 1, lor2 = 0, s2 = 1000;
#pragma omp target parallel for reduction(&&: land2) reduction(||: lor2) reduction(+: s2)
  for (int i = 0; i < 64; i++) { land2 = land2 && (i != 40); lor2 = lor2 || (i > 100); s2 += 1; }
  if (land2 != 0 || lor2 != 0) FAIL("&&/|| false case: %d %d", land2, lor2);
  if (s2 != 1064) FAIL("reduction did not combine with original value: %d", s2);
  return 0;
}
