// A function-pointer variable captured implicitly by a target region, pointing to a
// 'declare target indirect' function: the region receives the device function's address
// (LLVM 22 translates the implicit capture through the mapping table entry that indirect
// functions get at image load), so inside the region it compares equal to &inc taken on the
// device, and calling it works.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

#pragma omp begin declare target indirect
int inc(int v) { return v + 1; }
#pragma omp end declare target

typedef int (*fn_t)(int);

int main(void) {
  if (omp_get_num_devices() < 1) FAIL("no device");
  fn_t f = inc;
  int same = -1, r = 0, init = -1;
#pragma omp target map(from: same, r, init)
  {
    init = omp_is_initial_device();
    fn_t here = &inc;
    same = (f == here);
    r = f(41);
  }
  if (init != 0) FAIL("region ran on the host");
  if (same != 1) FAIL("implicitly captured function pointer is not the device address of inc");
  if (r != 42) FAIL("call through the captured pointer returned %d", r);
  return 0;
}
