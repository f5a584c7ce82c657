// LLVM-REF: fails (host plugin calls the host version of an indirect function: omp_is_initial_device()==1, host globals modified)
// declare target indirect: a host function pointer invoked on the device must run the
// device version of the function (OpenMP 5.1 declare target indirect clause).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int calls = 0;
#pragma omp declare target to(calls)

// Each function records its calls in the (declare target) global 'calls': if the device
// called the host version of a function, the host copy would change instead.
#pragma omp begin declare target indirect
int where(int x) {
#pragma omp atomic
  calls++;
  return omp_is_initial_device() * 1000 + x;
}
int bump(int x) { calls += x; return calls; }
#pragma omp end declare target

typedef int (*fn_t)(int);

int main(void) {
  fn_t w = where, b = bump;
  int r = -1, init = -1;
#pragma omp target firstprivate(w) map(from: r, init)
  {
    init = omp_is_initial_device();
    r = w(1) + w(2);
  }
  if (init != 0) FAIL("region ran on host");
  if (r != 3) FAIL("indirect call executed the host version of the function (r=%d)", r);
  if (calls != 0) FAIL("indirect call modified the host copy of a global (calls=%d)", calls);
#pragma omp target update from(calls)
  if (calls != 2) FAIL("device copy of calls=%d, expected 2", calls);
  int res[8];
#pragma omp target teams distribute parallel for firstprivate(w) map(from: res)
  for (int i = 0; i < 8; i++) res[i] = w(i);
  for (int i = 0; i < 8; i++)
    if (res[i] != i) FAIL("res[%d]=%d: host version called from parallel loop", i, res[i]);
  calls = 100;
#pragma omp target firstprivate(b) map(from: r)
  r = b(5);
#pragma omp target update from(calls)
  if (r != 2 + 8 + 5 || calls != 15) FAIL("bump via indirect pointer: r=%d device calls=%d", r, calls);
  return 0;
}
