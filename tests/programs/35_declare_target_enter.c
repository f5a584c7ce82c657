// CFLAGS: -fopenmp-version=52
// OpenMP 5.2 'declare target enter(...)' and begin/end declare target blocks.
// 'enter' needs -fopenmp-version=52 (see CFLAGS); without it the 5.1 spelling 'to' is used.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int counter = 0;
#if _OPENMP >= 202111
#pragma omp declare target enter(counter)
#else
#pragma omp declare target to(counter)
#endif

#pragma omp begin declare target
int table[8] = {1, 1, 2, 3, 5, 8, 13, 21};
static int scale = 3;
int lookup(int i) { return table[i & 7] * scale; }
#pragma omp end declare target

int bump(int k);
#if _OPENMP >= 202111
#pragma omp declare target enter(bump)
#else
#pragma omp declare target to(bump)
#endif
int bump(int k) { counter += k; return counter; }

int main(void) {
  int r = -1, init = -1;
#pragma omp target map(from: r, init)
  {
    init = omp_is_initial_device();
    r = lookup(6) + bump(4) + bump(1);
  }
  if (init != 0) FAIL("region ran on host");
  if (r != 39 + 4 + 5) FAIL("r=%d expected 48", r);
  if (counter != 0) FAIL("host counter changed: %d", counter);
#pragma omp target update from(counter)
  if (counter != 5) FAIL("device counter=%d expected 5", counter);
  // host-side calls use the host copies
  if (bump(2) != 7 || lookup(7) != 63) FAIL("host calls wrong");
#pragma omp target map(from: r)
  r = counter;
  if (r != 5) FAIL("device counter changed by host calls: %d", r);
  table[0] = 50;
#pragma omp target update to(table[0:1])
#pragma omp target map(from: r)
  r = lookup(0);
  if (r != 150) FAIL("lookup(0) after update to: %d", r);
  return 0;
}
