// Mapping individual struct members: only mapped members are transferred.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

struct S { int a; double b[10]; int c; long d; };

int main(void) {
  struct S s;
  s.a = 1; s.c = 3; s.d = 4;
  for (int i = 0; i < 10; i++) s.b[i] = i;
  int init = -1;
#pragma omp target map(tofrom: s.a, s.b[2:3]) map(from: init)
  {
    init = omp_is_initial_device();
    s.a += 100;
    for (int i = 2; i < 5; i++) s.b[i] *= 10;
  }
  if (init != 0) FAIL("region ran on host");
  if (s.a != 101) FAIL("s.a=%d expected 101", s.a);
  for (int i = 0; i < 10; i++) {
    double want = (i >= 2 && i < 5) ? i * 10.0 : i;
    if (s.b[i] != want) FAIL("s.b[%d]=%g expected %g", i, s.b[i], want);
  }
  if (s.c != 3 || s.d != 4) FAIL("unmapped members changed: c=%d d=%ld", s.c, s.d);
  // different map types on different members of the same struct
  s.c = 7; s.d = 8;
#pragma omp target map(to: s.c) map(from: s.d)
  {
    s.d = s.c * 2;
    s.c = -1;
  }
  if (s.c != 7) FAIL("map(to: s.c) copied back: %d", s.c);
  if (s.d != 14) FAIL("map(from: s.d) = %ld expected 14", s.d);
  // whole-struct map, then members of a present struct
#pragma omp target enter data map(to: s)
  s.a = 0;
#pragma omp target map(tofrom: s.a)
  s.a += 1; // present: device s.a was 101
#pragma omp target exit data map(from: s)
  if (s.a != 102) FAIL("present struct member: s.a=%d expected 102", s.a);
  // array of structs, section
  struct S arr[4];
  for (int k = 0; k < 4; k++) { arr[k].a = k; arr[k].c = 0; }
#pragma omp target map(tofrom: arr[1:2])
  for (int k = 1; k < 3; k++) arr[k].c = arr[k].a + 50;
  if (arr[0].c != 0 || arr[1].c != 51 || arr[2].c != 52 || arr[3].c != 0)
    FAIL("array-of-struct section: c = %d %d %d %d", arr[0].c, arr[1].c, arr[2].c, arr[3].c);
  return 0;
}
