// Device runtime services: omp_get_wtime monotonic, malloc/free inside target, printf.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  double t0 = -1, t1 = -1, tick = -1;
  int ondev = 0;
  long spin = 0;
#pragma omp target map(from: t0, t1, tick, ondev) map(tofrom: spin)
  {
    ondev = !omp_is_initial_device();
    t0 = omp_get_wtime();
    for (long i = 0; i < 2000000; i++) spin += i & 3;
    t1 = omp_get_wtime();
    tick = omp_get_wtick();
  }
  if (!ondev) FAIL("region ran on host");
  if (!(t1 >= t0)) FAIL("omp_get_wtime not monotonic: %g then %g", t0, t1);
  if (!(tick > 0)) FAIL("omp_get_wtick=%g", tick);
  if (spin != 3000000) FAIL("spin=%ld", spin);
  // malloc/free on the device
  long sum = -1;
  int okflag = 0;
#pragma omp target map(from: sum, okflag)
  {
    int n = 1000;
    int *buf = (int *)malloc(n * sizeof(int));
    okflag = buf != NULL;
    if (buf) {
      for (int i = 0; i < n; i++) buf[i] = i;
      long s = 0;
      for (int i = 0; i < n; i++) s += buf[i];
      sum = s;
      free(buf);
    }
  }
  if (!okflag) FAIL("device malloc returned NULL");
  if (sum != 499500) FAIL("device malloc buffer sum=%ld", sum);
  // per-thread malloc in a parallel region
  int bad = 0;
#pragma omp target teams distribute parallel for reduction(+: bad)
  for (int i = 0; i < 256; i++) {
    char *p = (char *)malloc(64 + i);
    if (!p) { bad++; continue; }
    memset(p, i & 0x7f, 64 + i);
    if (p[63 + i] != (char)(i & 0x7f)) bad++;
    free(p);
  }
  if (bad) FAIL("%d per-thread device mallocs failed", bad);
  // printf from the device (the single line this program prints)
#pragma omp target
  printf("device printf ok %d\n", 42);
  fflush(stdout);
  return 0;
}
