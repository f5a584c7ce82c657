// Host tasks and target tasks interleaved through depend clauses (in/out/inout/mutexinoutset).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 128

int main(void) {
  int offdev = 0;
  int a[N], b = 0, log_[8], nlog = 0;
  for (int i = 0; i < N; i++) a[i] = 1;
#pragma omp parallel num_threads(4)
#pragma omp single
  {
#pragma omp task depend(out: a)
    { for (int i = 0; i < N; i++) a[i] = i; log_[nlog++] = 1; }
#pragma omp target map(tofrom: a) nowait depend(inout: a) map(tofrom: offdev)
    {
      offdev |= omp_is_initial_device();
      for (int i = 0; i < N; i++) a[i] = a[i] * 3;
    }
#pragma omp task depend(inout: a)
    { for (int i = 0; i < N; i++) a[i] += 1; log_[nlog++] = 2; }
#pragma omp target map(tofrom: a) nowait depend(inout: a)
    for (int i = 0; i < N; i++) a[i] = a[i] * 2;
    // mutually exclusive (any order, never concurrent) updates of b
    for (int k = 0; k < 6; k++) {
#pragma omp target map(tofrom: b) nowait depend(mutexinoutset: b)
      b = b * 2 + 1; // same update each time: any serial order gives 2^6-1
    }
#pragma omp task depend(in: a, b)
    log_[nlog++] = 3;
#pragma omp taskwait
  }
  if (offdev) FAIL("target region ran on the host");
  if (nlog != 3 || log_[0] != 1 || log_[1] != 2 || log_[2] != 3) FAIL("host task order wrong");
  for (int i = 0; i < N; i++)
    if (a[i] != (i * 3 + 1) * 2) FAIL("a[%d]=%d expected %d", i, a[i], (i * 3 + 1) * 2);
  if (b != 63) FAIL("mutexinoutset updates lost: b=%d expected 63", b);
  // depend on array sections: independent halves can run in any order, final merge after both
  long h[2] = {0, 0};
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp target map(tofrom: h[0:1]) nowait depend(out: h[0])
    for (int i = 0; i < 1000; i++) h[0] += i;
#pragma omp target map(tofrom: h[1:1]) nowait depend(out: h[1])
    for (int i = 1000; i < 2000; i++) h[1] += i;
#pragma omp task depend(in: h[0], h[1])
    h[0] += h[1];
#pragma omp taskwait
  }
  if (h[0] != 1999000) FAIL("h[0]=%ld", h[0]);
  return 0;
}
