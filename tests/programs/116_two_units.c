// A program of two translation units, each with its own target regions (generic with a parallel
// region, SPMD teams reduction) and declare-target functions called across the units (a calls
// b's, b calls a's), plus a declare-target global defined in b and read from a's kernels.
// main() also calls functions of unit b that launch their own target regions. One device image
// per unit must end up as one consistent device program (one device runtime, one global each).
// SOURCES: units/116_two_units_b.c
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define NT 40
#define N 10007

#pragma omp declare target
int unit_b_mix(int x);          // defined in units/116_two_units_b.c
extern int unit_b_table[16];    // defined in units/116_two_units_b.c
int unit_a_scale(int x) { return 5 * x - 2; }
#pragma omp end declare target

int unit_b_generic(int *tid, int *nth, int *seen, int nthr, int magic);
long unit_b_reduce(int n);

static int a_scale(int x) { return 5 * x - 2; }
static int b_mix(int x) { return 3 * x + 7; }

int main(void) {
  int tid[NT], nth[NT], seen[NT];

  // Unit a's generic kernel: a shared local of the sequential part, then a parallel region that
  // calls unit b's function.
  int ondev = 0, after = -1;
  for (int i = 0; i < NT; i++) tid[i] = nth[i] = seen[i] = -1;
#pragma omp target map(tofrom: tid, nth, seen, ondev, after)
  {
    int base = unit_b_mix(11), sum = 0;
    ondev = !omp_is_initial_device();
#pragma omp parallel num_threads(32)
    {
      int t = omp_get_thread_num();
      if (t < NT) {
        tid[t] = t;
        nth[t] = omp_get_num_threads();
        seen[t] = base + unit_a_scale(t);
      }
#pragma omp atomic
      sum += t;
    }
    after = sum;
  }
  if (!ondev) FAIL("unit a generic region ran on the host");
  for (int t = 0; t < NT; t++) {
    int want_tid = t < 32 ? t : -1, want_nth = t < 32 ? 32 : -1;
    int want_seen = t < 32 ? b_mix(11) + a_scale(t) : -1;
    if (tid[t] != want_tid || nth[t] != want_nth || seen[t] != want_seen)
      FAIL("unit a generic: slot %d got tid %d nthreads %d value %d, expected %d %d %d", t, tid[t], nth[t],
           seen[t], want_tid, want_nth, want_seen);
  }
  if (after != 32 * 31 / 2) FAIL("unit a generic: main thread saw sum %d, expected %d", after, 32 * 31 / 2);

  // Unit b's generic kernel (calls unit a's function), with a thread count not a multiple of 32.
  for (int round = 0; round < 2; round++) {
    int nthr = round ? 33 : 8, magic = 20 + round;
    if (!unit_b_generic(tid, nth, seen, nthr, magic)) FAIL("unit b generic region ran on the host");
    for (int t = 0; t < nthr; t++) {
      int want = a_scale(magic) + b_mix(t);
      if (tid[t] != t || nth[t] != nthr || seen[t] != want)
        FAIL("unit b generic (%d threads): slot %d got tid %d nthreads %d value %d, expected %d %d %d", nthr, t,
             tid[t], nth[t], seen[t], t, nthr, want);
    }
  }

  // Unit b's SPMD reduction (calls unit a's function, reads unit b's global).
  long want = 0;
  for (int i = 0; i < N; i++) want += a_scale(i) + b_mix(i) + 100 * (i % 16);
  long got = unit_b_reduce(N);
  if (got != want) FAIL("unit b reduction: %ld, expected %ld", got, want);

  // Unit a's SPMD reduction: calls unit b's function and reads unit b's global (set by the
  // update in unit_b_reduce) from this unit's kernel.
  long s = 0, m = -1;
  int dev_flag = 0;
#pragma omp target teams distribute parallel for reduction(+: s) reduction(max: m) map(tofrom: s, m, dev_flag)
  for (int i = 0; i < N; i++) {
    s += unit_b_mix(i) * 2 + unit_b_table[(i * 7) % 16];
    long v = unit_a_scale(i % 1000);
    m = v > m ? v : m;
    if (i == 0) dev_flag = !omp_is_initial_device();
  }
  long want_s = 0;
  for (int i = 0; i < N; i++) want_s += b_mix(i) * 2 + 100 * ((i * 7) % 16);
  if (!dev_flag) FAIL("unit a reduction ran on the host");
  if (s != want_s) FAIL("unit a reduction: sum %ld, expected %ld", s, want_s);
  if (m != a_scale(999)) FAIL("unit a reduction: max %ld, expected %d", m, a_scale(999));

  // Interleave the units once more: b's kernel after a's must still see consistent state.
  got = unit_b_reduce(1000);
  want = 0;
  for (int i = 0; i < 1000; i++) want += a_scale(i) + b_mix(i) + 100 * (i % 16);
  if (got != want) FAIL("unit b reduction (second call): %ld, expected %ld", got, want);
  return 0;
}
