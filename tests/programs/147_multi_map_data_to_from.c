// LLVM-REF: fails (LLVM 22 handles the clauses last to first at exit: 'from' only drops a reference, and the 'to' clause that ends the mapping copies nothing back)
// target data map(to: x) map(from: x) with x not mapped before: the construct allocates x, so
// the 'to' clause copies it in at entry, and the construct releases it, so the 'from' clause
// copies it back at exit, whichever of the two clauses the runtime handles last. In between,
// the host copy is untouched.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int dev = omp_get_default_device();
  if (omp_get_num_devices() < 1) FAIL("no device");
  int x = 1, in = -1, mid = -1, init = -1;
#pragma omp target data map(to: x) map(from: x)
  {
#pragma omp target map(tofrom: x) map(from: in, init)
    {
      init = omp_is_initial_device();
      in = x;
      x = 2;
    }
    mid = x;
  }
  if (init != 0) FAIL("region ran on the host");
  if (in != 1) FAIL("x not copied in at entry of target data (device saw %d)", in);
  if (mid != 1) FAIL("host x changed inside target data (x=%d)", mid);
  if (x != 2) FAIL("map(from: x) of the same construct did not copy x back at exit (x=%d)", x);
  if (omp_target_is_present(&x, dev)) FAIL("x still mapped after target data");
  return 0;
}
