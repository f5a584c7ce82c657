// LLVM-REF: fails (LLVM 22 leaves a mapper-mapped struct entry mapped after exit data map(mapper(id), delete:), and keeps the pointee of map(release: x) through the default mapper mapped; same root as 96)
// User-defined mappers beyond the basics: target update to/from through a named mapper
// (mapper modifier on motion clauses), update to(v) keeping the attached device pointer,
// map-type decay (mapper map(to:) used with map(from:) transfers nothing; map(tofrom:) used
// with map(alloc:) transfers nothing), and the default mapper applied to each element of an
// array of structs.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 12

// (named mappers on V only: clang applies a type's default mapper to the struct item inside a
// named mapper of the same type too, which would map all of v.d)
typedef struct { int n; int gen; int *d; } V;
typedef struct { int n; int gen; int *d; } W;
#pragma omp declare mapper(W v) map(tofrom: v, v.d[0:v.n])
#pragma omp declare mapper(head : V v) map(tofrom: v, v.d[0:v.n / 2])
#pragma omp declare mapper(inonly : V v) map(to: v, v.d[0:v.n])

#define MK(T) static T mk##T(int n, int base) { \
  T v; v.n = n; v.gen = 0; v.d = malloc(n * sizeof(int)); \
  for (int i = 0; i < n; i++) v.d[i] = base + i; \
  return v; }
MK(V)
MK(W)

int main(void) {
  int dev = omp_get_default_device();
  int offdev = 0;
  V v = mkV(N, 0);
  int *hostd = v.d;
#pragma omp target enter data map(mapper(head), to: v)
  if (omp_target_is_present(&v.d[N / 2], dev)) FAIL("named mapper 'head' mapped v.d[N/2]");
  if (!omp_target_is_present(&v.d[N / 2 - 1], dev)) FAIL("named mapper 'head' did not map v.d[N/2-1]");
  for (int i = 0; i < N; i++) v.d[i] = 100 + i;
  v.gen = 7;
#pragma omp target update to(mapper(head): v)
  int sum = 0, gen = 0;
#pragma omp target map(from: sum, gen) map(tofrom: offdev)
  {
    offdev |= omp_is_initial_device();
    gen = v.gen;
    sum = 0;
    for (int i = 0; i < N / 2; i++) { sum += v.d[i]; v.d[i] = -i; }
  }
  if (offdev) FAIL("region ran on the host");
  if (gen != 7) FAIL("update to(mapper(head): v) did not update v.gen on the device: %d", gen);
  int want = 0;
  for (int i = 0; i < N / 2; i++) want += 100 + i;
  if (sum != want) FAIL("update to(mapper(head): v): device head sum %d expected %d", sum, want);
  if (v.d[1] != 101) FAIL("device write leaked to the host pointee: the struct copy replaced the device pointer");
#pragma omp target update from(mapper(head): v)
  if (v.d != hostd) FAIL("update from through mapper replaced the host pointer");
  for (int i = 0; i < N; i++) {
    int w = i < N / 2 ? -i : 100 + i;
    if (v.d[i] != w) FAIL("update from(mapper(head): v): v.d[%d]=%d expected %d", i, v.d[i], w);
  }
#pragma omp target exit data map(mapper(head), delete: v)
  if (omp_target_is_present(&v, dev) || omp_target_is_present(&v.d[0], dev)) FAIL("still present after delete through mapper");
  // decay: mapper map(to:) with clause map(from:) -> alloc, nothing is copied in or out
  V w = mkV(N, 0);
#pragma omp target map(mapper(inonly), from: w) map(from: sum)
  {
    sum = 0;
    for (int i = 0; i < N; i++) w.d[i] = 9;
  }
  for (int i = 0; i < N; i++)
    if (w.d[i] != i) FAIL("mapper map(to:) used with map(from:) copied back: w.d[%d]=%d", i, w.d[i]);
  // decay: default mapper (tofrom) with clause map(alloc:) -> alloc
  W x = mkW(N, 0);
#pragma omp target enter data map(alloc: x)
  if (!omp_target_is_present(&x.d[N - 1], dev)) FAIL("map(alloc: x) with default mapper did not map x.d");
#pragma omp target
  for (int i = 0; i < N; i++) x.d[i] = 50;
#pragma omp target exit data map(release: x)
  for (int i = 0; i < N; i++)
    if (x.d[i] != i) FAIL("release through default mapper copied back: x.d[%d]=%d", i, x.d[i]);
  if (omp_target_is_present(x.d, dev)) FAIL("x.d still mapped after release");
  // array of structs: default mapper per element
  W arr[3];
  for (int k = 0; k < 3; k++) arr[k] = mkW(4 + k, 10 * k);
#pragma omp target map(tofrom: arr[0:3])
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < arr[k].n; i++) arr[k].d[i] *= 2;
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < 4 + k; i++)
      if (arr[k].d[i] != 2 * (10 * k + i)) FAIL("array of structs via mapper: arr[%d].d[%d]=%d", k, i, arr[k].d[i]);
  for (int k = 0; k < 3; k++) if (omp_target_is_present(arr[k].d, dev)) FAIL("arr[%d].d still mapped", k);
  return 0;
}
