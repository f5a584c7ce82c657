// LLVM extension ompx_hold: held mappings survive target exit data map(delete/release).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int offdev = 0;
  int dev = omp_get_default_device();
  int x = 1;
#pragma omp target data map(ompx_hold, tofrom: x)
  {
#pragma omp target enter data map(to: x) // dynamic refcount 1, no transfer
#pragma omp target map(tofrom: x) map(tofrom: offdev)
    {
      offdev |= omp_is_initial_device();
      x = 2;
    }
    if (offdev) FAIL("target region ran on the host");
#pragma omp target exit data map(delete: x)
    if (!omp_target_is_present(&x, dev)) FAIL("held mapping removed by exit data map(delete:)");
    if (x != 1) FAIL("exit data delete copied back (x=%d)", x);
#pragma omp target enter data map(to: x)
#pragma omp target exit data map(from: x) // dynamic 1->0, hold still 1: no transfer
    if (!omp_target_is_present(&x, dev)) FAIL("held mapping removed by exit data map(from:)");
    if (x != 1) FAIL("exit data from copied back while held (x=%d)", x);
#pragma omp target map(tofrom: x)
    x += 10; // 12
  }
  if (omp_target_is_present(&x, dev)) FAIL("x still present after hold region");
  if (x != 12) FAIL("x=%d after hold region, expected 12", x);
  // ompx_hold on a combined target construct
  int a[4] = {1, 2, 3, 4};
#pragma omp target map(ompx_hold, tofrom: a)
  for (int i = 0; i < 4; i++) a[i] *= 5;
  if (a[0] != 5 || a[3] != 20) FAIL("target map(ompx_hold,tofrom:) a = %d..%d", a[0], a[3]);
  if (omp_target_is_present(a, dev)) FAIL("a present after target region");
  return 0;
}
