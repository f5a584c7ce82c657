// target nowait with depend(out/inout/in) chains; non-commutative updates prove ordering.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 256

int main(void) {
  long a[N], b[N];
  int dev_ok = 1;
  for (int i = 0; i < N; i++) { a[i] = i; b[i] = 0; }
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp target enter data map(to: a, b) nowait depend(out: a, b)
    for (int k = 1; k <= 10; k++) {
#pragma omp target nowait depend(inout: a) map(tofrom: dev_ok)
      {
        if (omp_is_initial_device()) dev_ok = 0;
        for (int i = 0; i < N; i++) a[i] = a[i] * 2 + k; // order-sensitive
      }
    }
    // two readers of a, each writing a disjoint half of b
#pragma omp target nowait depend(in: a) depend(out: b)
    for (int i = 0; i < N / 2; i++) b[i] = a[i] + 1;
#pragma omp target nowait depend(in: a) depend(inout: b)
    for (int i = N / 2; i < N; i++) b[i] = a[i] - 1;
    // a host task must see completed device results only after exit data
#pragma omp target exit data map(from: a, b) nowait depend(inout: a, b)
#pragma omp task depend(in: a, b)
    {
      for (int i = 0; i < N; i++) {
        long v = i;
        for (int k = 1; k <= 10; k++) v = v * 2 + k;
        if (a[i] != v) { fprintf(stderr, "a[%d]=%ld expected %ld\n", i, a[i], v); exit(1); }
        long w = i < N / 2 ? v + 1 : v - 1;
        if (b[i] != w) { fprintf(stderr, "b[%d]=%ld expected %ld\n", i, b[i], w); exit(1); }
      }
    }
#pragma omp taskwait
  }
  if (!dev_ok) FAIL("a nowait target region ran on the host");
  // outside parallel: nowait + taskwait in the implicit task
  int x = 1;
#pragma omp target map(tofrom: x) nowait depend(inout: x)
  x += 10;
#pragma omp target map(tofrom: x) nowait depend(inout: x)
  x *= 3;
#pragma omp taskwait
  if (x != 33) FAIL("x=%d expected 33 (ordering of dependent nowait regions)", x);
  return 0;
}
