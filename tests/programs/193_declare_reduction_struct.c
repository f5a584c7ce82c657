// A user-defined reduction (`declare reduction`) on a struct {double sum; long count; int min}
// with an initializer, in `target teams distribute parallel for` (num_teams(8) thread_limit(128),
// then the default teams) and in `target parallel for`. The combiner and initializer run on the
// device, in the teams' and threads' reduction trees: a lost partial shows in count, a
// partial combined twice in sum, a private copy left uninitialized (not INT_MAX) in min.
// Every value is exact: the sums are multiples of 0.5 well inside a double's mantissa.
// On the CPU plugin libomp forms the teams; the ENV lines let it form them as asked.
// ENV: KMP_TEAMS_THREAD_LIMIT=8192
// ENV: OMP_NUM_THREADS=8
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 300007

struct stats {
  double sum;
  long count;
  int min;
};

#pragma omp declare reduction(merge : struct stats :                                   \
    omp_out.sum += omp_in.sum, omp_out.count += omp_in.count,                          \
    omp_out.min = omp_in.min < omp_out.min ? omp_in.min : omp_out.min)                 \
    initializer(omp_priv = (struct stats){0.0, 0, INT_MAX})

// The value of iteration i: its minimum (3) is reached at one i only, near the end.
static inline double value(int i) { return 0.5 * (i % 64); }
static inline int key(int i) { return i == N - 5 ? 3 : 1000 + (int)(((long)i * 7919) % 100003); }

static void check(const char *what, struct stats s, struct stats start) {
  double want_sum = start.sum;
  long want_count = start.count;
  int want_min = start.min;
  for (int i = 0; i < N; i++) {
    want_sum += value(i);
    if (i % 3 != 0) want_count++;
    if (key(i) < want_min) want_min = key(i);
  }
  if (s.sum != want_sum) FAIL("%s: sum %.1f, expected %.1f", what, s.sum, want_sum);
  if (s.count != want_count) FAIL("%s: count %ld, expected %ld", what, s.count, want_count);
  if (s.min != want_min) FAIL("%s: min %d, expected %d", what, s.min, want_min);
}

int main(void) {
  int on_device = 0;
  // The original value takes part: start from something other than the identity.
  struct stats start = {10.5, 7, 500000};

  struct stats a = start;
#pragma omp target teams distribute parallel for num_teams(8) thread_limit(128) \
    reduction(merge : a) map(tofrom: on_device)
  for (int i = 0; i < N; i++) {
    a.sum += 0.5 * (i % 64);
    if (i % 3 != 0) a.count++;
    int k = i == N - 5 ? 3 : 1000 + (int)(((long)i * 7919) % 100003);
    if (k < a.min) a.min = k;
    if (i == 0) on_device = !omp_is_initial_device();
  }
  if (!on_device) FAIL("the teams region did not run on the device");
  check("num_teams(8) thread_limit(128)", a, start);

  struct stats b = start;
#pragma omp target teams distribute parallel for reduction(merge : b)
  for (int i = 0; i < N; i++) {
    b.sum += 0.5 * (i % 64);
    if (i % 3 != 0) b.count++;
    int k = i == N - 5 ? 3 : 1000 + (int)(((long)i * 7919) % 100003);
    if (k < b.min) b.min = k;
  }
  check("default teams", b, start);

  // A start whose min is below every key: min must stay the original's.
  struct stats start_low = {0.0, 0, 2};
  struct stats c = start_low;
  on_device = 0;
#pragma omp target parallel for reduction(merge : c) map(tofrom: on_device)
  for (int i = 0; i < N; i++) {
    c.sum += 0.5 * (i % 64);
    if (i % 3 != 0) c.count++;
    int k = i == N - 5 ? 3 : 1000 + (int)(((long)i * 7919) % 100003);
    if (k < c.min) c.min = k;
    if (i == 0) on_device = !omp_is_initial_device();
  }
  if (!on_device) FAIL("the parallel region did not run on the device");
  check("target parallel for", c, start_low);
  return 0;
}
