// LLVM-REF: fails (clang-22 alone calls the host address: the host version runs)
// Arrays of host function pointers used on the device: a mapped array, a firstprivate array,
// an array inside a mapped struct, and a two-dimensional dispatch table indexed by data
// computed on the device. The functions report omp_is_initial_device() in their result.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

#pragma omp begin declare target indirect
int add3(int x) { return x + 3 + 1000 * omp_is_initial_device(); }
int mul5(int x) { return x * 5 + 1000 * omp_is_initial_device(); }
int neg(int x) { return -x + 1000 * omp_is_initial_device(); }
int sq(int x) { return x * x + 1000 * omp_is_initial_device(); }
#pragma omp end declare target

typedef int (*fn_t)(int);

static int expect(int k, int x) {
  switch (k & 3) {
  case 0: return x + 3;
  case 1: return x * 5;
  case 2: return -x;
  default: return x * x;
  }
}

struct ops {
  int count;
  fn_t fn[4];
};

int main(void) {
  fn_t fns[4] = {add3, mul5, neg, sq};
  enum { N = 1000 };
  int *out = malloc(N * sizeof(int));
  // The loop: a mapped array indexed by the iteration.
#pragma omp target teams distribute parallel for map(to: fns) map(from: out[0:N])
  for (int i = 0; i < N; i++) out[i] = fns[i & 3](i);
  for (int i = 0; i < N; i++)
    if (out[i] != expect(i, i)) FAIL("mapped array: out[%d] = %d, expected %d", i, out[i], expect(i, i));
  // firstprivate array, index computed on the device.
#pragma omp target teams distribute parallel for firstprivate(fns) map(from: out[0:N])
  for (int i = 0; i < N; i++) out[i] = fns[(i * 7 + 1) % 4](i % 50);
  for (int i = 0; i < N; i++)
    if (out[i] != expect((i * 7 + 1) % 4, i % 50)) FAIL("firstprivate array: out[%d] = %d", i, out[i]);
  // An array inside a struct, through a pointer to the struct.
  struct ops o = {4, {sq, neg, mul5, add3}};
  struct ops *po = &o;
  int total = 0;
#pragma omp target map(to: po[0:1]) map(tofrom: total)
  for (int k = 0; k < po->count; k++) total += po->fn[k](k + 1);
  int want = 1 * 1 + -2 + 3 * 5 + (4 + 3);
  if (total != want) FAIL("struct array total %d, expected %d", total, want);
  // Two levels: a table of tables.
  fn_t row0[2] = {add3, neg}, row1[2] = {mul5, sq};
  fn_t *rows[2] = {row0, row1};
  int r[4];
#pragma omp target map(to: row0, row1, rows) map(from: r)
  for (int k = 0; k < 4; k++) r[k] = rows[k >> 1][k & 1](k + 10);
  if (r[0] != 13 || r[1] != -11 || r[2] != 60 || r[3] != 169) FAIL("table of tables: %d %d %d %d", r[0], r[1], r[2], r[3]);
  free(out);
  return 0;
}
