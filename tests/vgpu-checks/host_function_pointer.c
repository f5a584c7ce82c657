// A host function pointer called in device code without `declare target indirect`: nothing
// translates it, so the kernel calls a host address. A GPU faults (illegal address); the virtual
// GPU would run the host's code, and instead names the call and what it calls.
// CFLAGS: -g
// EXPECT: abort
// EXPECT-STDERR: calls through 0x
// EXPECT-STDERR: which is host code: `twice`
// EXPECT-STDERR: host_function_pointer.c:20:
#include <stdio.h>
int twice(int x) { return 2 * x; }
#pragma omp declare target
int (*fp)(int);
#pragma omp end declare target
int main(void) {
  int r = -1;
  fp = twice;
#pragma omp target update to(fp)
#pragma omp target map(tofrom: r)
  {
    r = fp(21);
  }
  printf("r = %d\n", r);
  return 0;
}
