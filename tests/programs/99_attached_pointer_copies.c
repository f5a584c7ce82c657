// LLVM-REF: fails (LLVM 22 skips the whole map(always, to: s) copy when s holds an attached pointer, so s.gen stays 1 on the device)
// Copies of a struct whose pointer member is attached to a device pointee: `target update to`
// and `map(always, to)` keep the device pointer (the region keeps writing the device pointee),
// `update from` and `map(always, from)` keep the host pointer.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 16

struct Buf { int n; int *p; int gen; };

int main(void) {
  struct Buf s;
  s.n = N; s.gen = 0;
  s.p = malloc(N * sizeof(int));
  int *host_p = s.p;
  for (int i = 0; i < N; i++) s.p[i] = i;
#pragma omp target enter data map(to: s) map(to: s.p[0:N])
  // the host changes a scalar member and pushes the whole struct again
  s.gen = 1;
#pragma omp target update to(s)
#pragma omp target
  for (int i = 0; i < s.n; i++) s.p[i] += 100 * s.gen;
  if (s.p[0] != 0) FAIL("region wrote the host pointee: the device pointer was replaced by the host one");
  s.gen = 2;
#pragma omp target map(always, to: s)
  for (int i = 0; i < s.n; i++) s.p[i] += 1000 * s.gen;
  if (s.p[1] != 1) FAIL("region wrote the host pointee after map(always, to)");
#pragma omp target
  s.gen = 3;
#pragma omp target update from(s)
  if (s.p != host_p) FAIL("update from(s) replaced the host pointer");
  if (s.gen != 3) FAIL("update from(s): gen=%d", s.gen);
#pragma omp target map(always, from: s)
  s.gen = 4;
  if (s.p != host_p) FAIL("map(always, from: s) replaced the host pointer");
  if (s.gen != 4) FAIL("map(always, from: s): gen=%d", s.gen);
#pragma omp target exit data map(from: s.p[0:N]) map(release: s)
  for (int i = 0; i < N; i++)
    if (s.p[i] != i + 100 + 2000) FAIL("s.p[%d]=%d expected %d", i, s.p[i], i + 2100);
  free(host_p);
  return 0;
}
