// LLVM-REF: fails (clang-22 alone compiles the call as a plain indirect call: the host version runs, omp_is_initial_device()==1)
// Calls through host function pointers of 'declare target indirect' functions, in every kind
// of region, without any help from the program (issue 25): the pass plugin translates each
// call with __kmpc_target_translate_fptr, so the device's version runs. Each function records
// its calls in a declare target global and reports omp_is_initial_device(): the host version
// would change the host copy and report 1.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int calls = 0;
#pragma omp declare target to(calls)

#pragma omp begin declare target indirect
int inc(int x) {
#pragma omp atomic
  calls++;
  return x + 1 + 1000 * omp_is_initial_device();
}
int dbl(int x) {
#pragma omp atomic
  calls++;
  return 2 * x + 1000 * omp_is_initial_device();
}
#pragma omp end declare target

typedef int (*fn_t)(int);

int main(void) {
  fn_t f = inc, g = dbl;
  int r = -1, init = -1;
  // Generic mode, one thread: firstprivate pointers.
#pragma omp target firstprivate(f, g) map(from: r, init)
  {
    init = omp_is_initial_device();
    r = f(10) + g(10);
  }
  if (init != 0) FAIL("region ran on the host");
  if (r != 11 + 20) FAIL("generic region: f(10) + g(10) = %d, expected 31", r);
  // SPMD: every thread calls through the pointer it picked.
  enum { N = 256 };
  int out[N];
#pragma omp target teams distribute parallel for firstprivate(f, g) map(from: out)
  for (int i = 0; i < N; i++) {
    fn_t h = (i % 3) ? f : g;
    out[i] = h(i);
  }
  for (int i = 0; i < N; i++) {
    int want = (i % 3) ? i + 1 : 2 * i;
    if (out[i] != want) FAIL("out[%d] = %d, expected %d (1000 more: the host version ran)", i, out[i], want);
  }
  // A pointer mapped by value (map(to:)) and one chosen inside a nested parallel region.
  int sum = 0;
#pragma omp target map(to: g) map(tofrom: sum)
#pragma omp parallel for reduction(+: sum) num_threads(4)
  for (int i = 0; i < 8; i++) sum += g(i);
  if (sum != 2 * 28) FAIL("nested parallel sum %d, expected 56", sum);
  if (calls != 0) FAIL("the host copy of calls changed (%d): a host version ran", calls);
#pragma omp target update from(calls)
  if (calls != 2 + N + 8) FAIL("device calls = %d, expected %d", calls, 2 + N + 8);
  return 0;
}
