// A struct mapped member by member starting in the middle (map(s.b, s.v)): its device copy
// keeps the host's alignment, so an over-aligned member is over-aligned on the device too.
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

struct S {
  double a;
  double b;                                // host offset 8: the mapped part starts here
  double v[2] __attribute__((aligned(16))); // host offset 16, 16-byte aligned
  double w;
};

int main(void) {
  struct S s __attribute__((aligned(64))) = {1, 2, {3, 4}, 5};
  int misaligned = -1, init = -1;
#pragma omp target map(tofrom: s.b, s.v) map(from: misaligned, init)
  {
    init = omp_is_initial_device();
    uintptr_t address = (uintptr_t)&s.v[0];
    __asm__ volatile("" : "+r"(address)); // keep the compiler from folding the known alignment
    misaligned = (int)(address % 16);
    s.b += 10;
    s.v[0] += 20;
    s.v[1] += 30;
  }
  if (init != 0) FAIL("region ran on the host");
  if (misaligned != 0) FAIL("device copy of s.v is %d bytes off its 16-byte alignment", misaligned);
  if (s.a != 1 || s.b != 12 || s.v[0] != 23 || s.v[1] != 34 || s.w != 5)
    FAIL("s = {%g, %g, {%g, %g}, %g}", s.a, s.b, s.v[0], s.v[1], s.w);
  return 0;
}
