// LLVM-REF: fails (clang-22 alone calls the host address: on a GPU the kernel faults, on the CPU plugin the host version runs)
// The program of issue 25, as a portable OpenMP program writes it: a table of host function
// pointers mapped to the device and called in a combined construct, with no lookup call of
// its own. Compiled with plain clang-22 and rustomp's clang configuration it works.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

#pragma omp begin declare target indirect
// (+ 1000 on the host: the host version must not run in the loop.)
int add3(int x) { return x + 3 + 1000 * omp_is_initial_device(); }
int mul5(int x) { return x * 5 + 1000 * omp_is_initial_device(); }
#pragma omp end declare target

typedef int (*fn_t)(int);

int main(void) {
  enum { n = 4096 };
  int *out = malloc(n * sizeof(int));
  int on_host = 1;
  fn_t fns[2] = {add3, mul5};
#pragma omp target teams distribute parallel for map(to: fns) map(from: out[0:n]) map(tofrom: on_host)
  for (int i = 0; i < n; i++) {
    if (i == 0) on_host = omp_is_initial_device();
    out[i] = fns[i & 1](i);
  }
  if (on_host) FAIL("the loop ran on the host");
  for (int i = 0; i < n; i++) {
    int want = (i & 1) ? i * 5 : i + 3;
    if (out[i] != want) FAIL("out[%d] = %d, expected %d", i, out[i], want);
  }
  free(out);
  return 0;
}
