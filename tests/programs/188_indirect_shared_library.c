// LLVM-REF: fails (clang-22 alone compiles the call as a plain indirect call: the host version runs, omp_is_initial_device()==1)
// SHARED: units/188_indirect_lib.c
// Function pointers of a shared library (issue 27): `declare target indirect` functions defined
// in a .so that has its own offload image, registered separately, passed by pointer into the
// program's target regions, run their device versions, as the program's own functions do; and
// the library's region calls the program's function through a pointer. Each function reports
// omp_is_initial_device() in its result (the host version adds 1000) and counts its calls in a
// declare target global of its own image.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

typedef int (*fn_t)(int);
void lib_functions(fn_t out[2]);
int lib_apply(fn_t f, int x);
int lib_device_calls(void);

int main_calls = 0;
#pragma omp declare target to(main_calls)

#pragma omp begin declare target indirect
int main_inc(int x) {
#pragma omp atomic
  main_calls++;
  return x + 1 + 1000 * omp_is_initial_device();
}
#pragma omp end declare target

int main(void) {
  fn_t lib[2];
  lib_functions(lib);
  fn_t f = lib[0], g = main_inc;
  int r = -1, s = -1, init = -1;
  // Generic mode, one thread: the library's pointer and the program's, firstprivate.
#pragma omp target firstprivate(f, g) map(from: r, s, init)
  {
    init = omp_is_initial_device();
    r = f(10);
    s = g(10);
  }
  if (init != 0) FAIL("region ran on the host");
  if (s != 11) FAIL("the program's function: g(10) = %d, expected 11", s);
  if (r != 30) FAIL("the library's function: f(10) = %d, expected 30 (1000 more: the host version ran)", r);
  // SPMD: a mapped table mixing both libraries' functions.
  enum { N = 300 };
  fn_t fns[3] = {lib[0], lib[1], main_inc};
  int out[N];
#pragma omp target teams distribute parallel for map(to: fns) map(from: out)
  for (int i = 0; i < N; i++) out[i] = fns[i % 3](i);
  for (int i = 0; i < N; i++) {
    int want = i % 3 == 0 ? 3 * i : i % 3 == 1 ? -i : i + 1;
    if (out[i] != want) FAIL("out[%d] = %d, expected %d (1000 more: the host version ran)", i, out[i], want);
  }
  // The library's own region, calling the program's function and its own through pointers.
  int a = lib_apply(main_inc, 41), b = lib_apply(lib[1], 5);
  if (a != 42) FAIL("library region calling the program's function: %d, expected 42", a);
  if (b != -5) FAIL("library region calling its own function: %d, expected -5", b);
  // Every call ran on the device: the device copies counted them, the host copies did not.
  int lib_calls = lib_device_calls();
  if (lib_calls != 1 + 2 * N / 3 + 1) FAIL("the library's device calls: %d, expected %d", lib_calls, 1 + 2 * N / 3 + 1);
  if (main_calls != 0) FAIL("the program's host copy of main_calls changed (%d): a host version ran", main_calls);
#pragma omp target update from(main_calls)
  if (main_calls != 1 + N / 3 + 1) FAIL("the program's device calls: %d, expected %d", main_calls, 1 + N / 3 + 1);
  return 0;
}
