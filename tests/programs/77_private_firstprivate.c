// Explicit private / firstprivate clauses and defaultmap on target constructs.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int arr[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  int p = 5, out = 0, init = -1;
  // firstprivate array: private copy initialized from host; host copy unchanged
#pragma omp target firstprivate(arr) map(from: out, init)
  {
    init = omp_is_initial_device();
    int s = 0;
    for (int i = 0; i < 8; i++) { s += arr[i]; arr[i] = 0; }
    out = s;
  }
  if (init != 0) FAIL("region ran on host");
  if (out != 36) FAIL("firstprivate array sum %d", out);
  if (arr[0] != 1) FAIL("firstprivate array copied back");
  // private: not initialized from host, not copied back
#pragma omp target private(p) map(from: out)
  { p = 11; out = p * 2; }
  if (p != 5 || out != 22) FAIL("private: p=%d out=%d", p, out);
  // firstprivate scalar present on the device: firstprivate wins over the mapping
  int q = 1;
#pragma omp target enter data map(to: q)
  q = 2;
#pragma omp target firstprivate(q) map(from: out)
  out = q;
  if (out != 2) FAIL("firstprivate(q) saw %d, expected host value 2", out);
#pragma omp target exit data map(delete: q)
  // defaultmap(firstprivate: aggregate): arrays become firstprivate
  int b[4] = {1, 1, 1, 1};
#pragma omp target defaultmap(firstprivate: aggregate) map(from: out)
  { b[0] = 9; out = b[0] + b[1]; }
  if (out != 10 || b[0] != 1) FAIL("defaultmap(firstprivate:aggregate): out=%d b[0]=%d", out, b[0]);
  // defaultmap(to: scalar): scalars mapped to, changes not returned
  int r = 4;
#pragma omp target defaultmap(to: scalar) map(from: out)
  { out = r; r = 40; }
  if (out != 4 || r != 4) FAIL("defaultmap(to:scalar): out=%d r=%d", out, r);
  // firstprivate struct by value
  struct { int a; double d; } st = {3, 1.5};
#pragma omp target firstprivate(st) map(from: out)
  { st.a += 1; out = st.a * 10 + (int)(st.d * 2); }
  if (out != 43 || st.a != 3) FAIL("firstprivate struct: out=%d st.a=%d", out, st.a);
  return 0;
}
