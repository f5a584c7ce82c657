// LLVM-REF: fails (clang-22 alone calls the host address: the host version runs)
// A function pointer as a struct member ("operations" records): a struct mapped by value, an
// array of structs mapped as a section, and a struct reached through a pointer member (the
// callee is loaded from memory the device loaded a pointer from), plus a callback passed to a
// declare target function.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

#pragma omp begin declare target indirect
double scale(double x, double k) { return x * k + 1000 * omp_is_initial_device(); }
double shift(double x, double k) { return x + k + 1000 * omp_is_initial_device(); }
#pragma omp end declare target

typedef double (*op_t)(double, double);

struct op {
  op_t apply;
  double k;
};

struct pipeline {
  int n;
  struct op *stages;
};

#pragma omp begin declare target
// A device function that calls the callback it is given.
double apply_all(const struct op *ops, int n, double x) {
  for (int i = 0; i < n; i++) x = ops[i].apply(x, ops[i].k);
  return x;
}
#pragma omp end declare target

int main(void) {
  struct op one = {scale, 3.0};
  double r = 0;
#pragma omp target map(to: one) map(from: r)
  r = one.apply(2.0, one.k);
  if (r != 6.0) FAIL("struct by value: %g, expected 6", r);

  enum { N = 64 };
  struct op ops[N];
  for (int i = 0; i < N; i++) ops[i] = (struct op){(i & 1) ? shift : scale, (double)i};
  double out[N];
#pragma omp target teams distribute parallel for map(to: ops[0:N]) map(from: out)
  for (int i = 0; i < N; i++) out[i] = ops[i].apply(10.0, ops[i].k);
  for (int i = 0; i < N; i++) {
    double want = (i & 1) ? 10.0 + i : 10.0 * i;
    if (out[i] != want) FAIL("ops[%d]: %g, expected %g", i, out[i], want);
  }

  struct op stages[3] = {{scale, 2.0}, {shift, 1.0}, {scale, 10.0}};
  struct pipeline p = {3, stages};
  double y = 0;
#pragma omp target map(to: p, stages) map(from: y)
  {
    struct pipeline *pp = &p;
    pp->stages = stages; // the device's copy of the stages
    y = apply_all(pp->stages, pp->n, 4.0);
  }
  if (y != ((4.0 * 2.0) + 1.0) * 10.0) FAIL("pipeline: %g, expected 90", y);
  return 0;
}
