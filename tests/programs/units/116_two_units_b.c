// Second translation unit of 116_two_units.c: its own target regions (a generic kernel with a
// parallel region, an SPMD teams reduction), a declare-target function called from unit a, and
// a call to a declare-target function defined in unit a.
#include <omp.h>

#pragma omp declare target
int unit_a_scale(int x); // defined in 116_two_units.c
int unit_b_mix(int x) { return 3 * x + 7; }
int unit_b_table[16];
#pragma omp end declare target

// Generic kernel: the sequential part fills a shared local, then a parallel region of `nthr`
// threads; each thread records its number, the team size and what it read. Returns 1 when the
// region ran on a device.
int unit_b_generic(int *tid, int *nth, int *seen, int nthr, int magic) {
  int ondev = 0;
#pragma omp target map(from: tid[0:nthr], nth[0:nthr], seen[0:nthr]) map(tofrom: ondev) firstprivate(nthr, magic)
  {
    int base = unit_a_scale(magic); // a local shared by the region below
    ondev = !omp_is_initial_device();
    for (int i = 0; i < nthr; i++) tid[i] = -1, nth[i] = -1, seen[i] = -1;
#pragma omp parallel num_threads(nthr)
    {
      int t = omp_get_thread_num();
      if (t < nthr) {
        tid[t] = t;
        nth[t] = omp_get_num_threads();
        seen[t] = base + unit_b_mix(t);
      }
    }
  }
  return ondev;
}

// SPMD teams reduction over unit_a_scale(i) + unit_b_mix(i) + unit_b_table[i % 16].
long unit_b_reduce(int n) {
  long s = 0;
  for (int i = 0; i < 16; i++) unit_b_table[i] = 100 * i;
#pragma omp target update to(unit_b_table)
#pragma omp target teams distribute parallel for reduction(+: s) map(tofrom: s)
  for (int i = 0; i < n; i++) s += unit_a_scale(i) + unit_b_mix(i) + unit_b_table[i % 16];
  return s;
}
