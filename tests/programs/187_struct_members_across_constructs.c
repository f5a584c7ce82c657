// LLVM-REF: fails (LLVM 22.1.8 gives t.a a separate device block: the region writes t.i and t.j past it, the heap breaks, the values stay 0)
// ENV: RUSTOMP_HOST_LEAK_CHECK=1
// EXPECT-STDERR-HOST: rustomp host plugin: device 0: 0 allocations (0 bytes) outstanding
// Members of one struct mapped by different constructs (issue 27). Inside
// `target data map(from: t.i, t.j)`, a `target map(from: t.a)` whose body writes t.a, t.i and
// t.j through the struct: the region reaches t.i and t.j at their offsets from t.a's device
// copy, so t.a's copy must lie where the struct's device copy has it, beside the data region's
// t.i and t.j. All three values come back. Then the same with `target enter/exit data`, the
// entry holding the struct's device memory leaving first, and a member between two others.
// Under the CPU plugin's leak check nothing stays allocated.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

struct T {
  int a;
  int pad[5];
  int i;
  int j;
};

struct U {
  double x;
  int n;
  double y;
  long z[3];
};

int main(void) {
  // The case.
  struct T t = {0, {0}, 0, 0};
  int init = -1;
#pragma omp target data map(from: t.i, t.j)
  {
#pragma omp target map(from: t.a) map(from: init)
    {
      init = omp_is_initial_device();
      t.a = 1;
      t.i = 2;
      t.j = 3;
    }
  }
  if (init != 0) FAIL("region ran on the host");
  if (t.a != 1 || t.i != 2 || t.j != 3)
    FAIL("after the data region: t.a=%d t.i=%d t.j=%d, expected 1 2 3", t.a, t.i, t.j);
  if (t.pad[0] != 0 || t.pad[4] != 0) FAIL("an unmapped member changed");

  // Unstructured: the entry that holds the struct's device memory leaves before the member
  // mapped inside it, whose data must still be there.
  struct U u = {1.5, 7, 2.5, {10, 20, 30}};
#pragma omp target enter data map(to: u.y, u.z)
#pragma omp target enter data map(to: u.x)
#pragma omp target map(tofrom: u.n)
  {
    // u.n: a member between the two entries, also found at its offset.
    u.n += (int)u.x;
    u.x += u.y;
    u.z[2] += u.z[0];
  }
  if (u.n != 8) FAIL("u.n=%d, expected 8", u.n);
#pragma omp target exit data map(from: u.y, u.z)
  if (u.z[2] != 40 || u.y != 2.5) FAIL("u.z[2]=%ld u.y=%g, expected 40 2.5", u.z[2], u.y);
  if (u.x != 1.5) FAIL("u.x came back before its exit data: %g", u.x);
#pragma omp target map(tofrom: u.x)
  u.x *= 2;
  if (u.x != 1.5) FAIL("u.x=%g: still mapped, its copy stays on the device", u.x);
#pragma omp target exit data map(from: u.x)
  if (u.x != 8.0) FAIL("u.x=%g, expected 8 ((1.5 + 2.5) * 2)", u.x);
  if (omp_target_is_present(&u, omp_get_default_device()))
    FAIL("u is still present after every entry left");
  return 0;
}
