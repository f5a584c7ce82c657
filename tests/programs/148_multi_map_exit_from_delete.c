// LLVM-REF: fails (LLVM 22 handles the clauses of exit data last to first, so with map(from: y) map(delete: y) the delete removes y before 'from' looks at it)
// target exit data with map(from: v) and map(delete: v) for the same variable: the copy back
// happens before the mapping is deleted, in either clause order.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int dev = omp_get_default_device();
  if (omp_get_num_devices() < 1) FAIL("no device");
  int y = 5, z = 5, init = -1;
#pragma omp target enter data map(to: y, z)
#pragma omp target map(tofrom: y, z) map(from: init)
  {
    init = omp_is_initial_device();
    y = 6;
    z = 6;
  }
  if (init != 0) FAIL("region ran on the host");
  if (y != 5 || z != 5) FAIL("copied back while still mapped (y=%d z=%d)", y, z);
#pragma omp target exit data map(delete: z) map(from: z)
#pragma omp target exit data map(from: y) map(delete: y)
  if (omp_target_is_present(&y, dev) || omp_target_is_present(&z, dev)) FAIL("still mapped after exit data with delete");
  if (z != 6 || y != 6)
    FAIL("exit data from+delete: z=%d (delete then from), y=%d (from then delete), expected 6", z, y);
  return 0;
}
