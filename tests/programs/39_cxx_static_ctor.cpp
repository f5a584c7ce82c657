// Static initializers of declare target C++ globals: constructors run for the device image.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

#pragma omp declare target
struct Table {
  int vals[16];
  int n;
  Table(int k) : n(16) { for (int i = 0; i < 16; i++) vals[i] = i * k; }
  int sum() const { int s = 0; for (int i = 0; i < n; i++) s += vals[i]; return s; }
};
static int compute_init() { int s = 0; for (int i = 1; i <= 10; i++) s += i; return s; }
Table tab(3);
int dyn = compute_init(); // dynamic initialization
int ctor_count = 0;
struct Counter { Counter() { ctor_count++; } };
Counter c1, c2;
#pragma omp end declare target

int main() {
  if (tab.sum() != 3 * 120 || dyn != 55 || ctor_count != 2) FAIL("host-side static init wrong");
  tab.vals[0] = 1000; // host copy only
  dyn = 1;
  int s = -1, d = -1, cc = -1, init = -1;
#pragma omp target map(from: s, d, cc, init)
  {
    init = omp_is_initial_device();
    s = tab.sum();
    d = dyn;
    cc = ctor_count;
    tab.vals[1] = 77;
  }
  if (init != 0) FAIL("region ran on host");
  if (s != 360) FAIL("device Table constructor not run (sum=%d, expected 360)", s);
  if (d != 55) FAIL("device dynamic initializer not run (dyn=%d)", d);
  if (cc != 2) FAIL("device constructors ran %d times, expected 2", cc);
  if (tab.vals[1] != 3) FAIL("device write leaked to host");
#pragma omp target update from(tab)
  if (tab.vals[0] != 0 || tab.vals[1] != 77) FAIL("update from(tab): %d %d", tab.vals[0], tab.vals[1]);
  return 0;
}
