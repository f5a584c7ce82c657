// Device code of every shape of call through a function pointer, for `cargo xtask test`'s
// indirect-call checks (build-tools/src/test/indirect.rs): with the pass plugin, each call
// through a pointer that may be a host function's goes through __kmpc_target_translate_fptr,
// and no direct call does. With calls_unit.c (no indirect entries of its own) it is also the
// two-unit program of the -foffload-lto check: unit b's call is translated at the device link.
#include <omp.h>

typedef int (*fn_t)(int);

#pragma omp begin declare target indirect
int add3(int x) { return x + 3; }
int mul5(int x) { return x * 5; }
#pragma omp end declare target

#pragma omp begin declare target
int direct_helper(int x) { return x - 1; }
int apply_in_b(fn_t f, int x); // calls_unit.c
struct op {
  fn_t apply;
  int k;
};
#pragma omp end declare target

int main(void) {
  fn_t f = add3;
  fn_t fns[2] = {add3, mul5};
  struct op o = {mul5, 2};
  enum { N = 64 };
  int out[N], r = 0;
#pragma omp target firstprivate(f) map(to: o) map(from: r)
  r = f(1) + o.apply(o.k) + direct_helper(3) + add3(4);
#pragma omp target teams distribute parallel for map(to: fns) map(from: out)
  for (int i = 0; i < N; i++) out[i] = fns[i & 1](i);
#pragma omp target firstprivate(f) map(tofrom: r)
  r += apply_in_b(f, 10);
  return r + out[1] == 0;
}
