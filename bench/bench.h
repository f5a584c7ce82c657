// Shared by the benchmark programs run by `cargo xtask bench` (see BENCHMARKS.md).
//
// Protocol: a program prints one line per measurement, `RESULT <name> <value> <unit>`, and
// nothing else on stdout. Each value is the median over several timed batches that follow a
// warm-up, so process start-up, image loading and first-touch costs are not measured.
//
// Arguments and environment (set by the runner):
//   argv[1] == "quick"   fewer and shorter batches (`cargo xtask bench --quick`)
//   BENCH_FILTER=text    only measurements whose name contains `text`
#ifndef RUSTOMP_BENCH_H
#define RUSTOMP_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int bench_quick;

static inline void bench_init(int argc, char **argv) {
  bench_quick = argc > 1 && strcmp(argv[1], "quick") == 0;
}

/// Seconds on the monotonic clock.
static inline double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/// Whether the measurement `name` is selected by BENCH_FILTER.
static inline int bench_want(const char *name) {
  const char *filter = getenv("BENCH_FILTER");
  return filter == NULL || filter[0] == '\0' || strstr(name, filter) != NULL;
}

/// The full-mode count, or a smaller one under `quick`.
static inline int bench_pick(int full, int quick) { return bench_quick ? quick : full; }

static inline void bench_result(const char *name, double value, const char *unit) {
  printf("RESULT %s %.6g %s\n", name, value, unit);
  fflush(stdout);
}

static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/// Median of `n` values (sorts them in place).
static inline double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define BENCH_MAX_BATCHES 64

/// Times `body(ctx, iters)` in `batches` batches after one warm-up batch and returns the
/// median seconds per iteration.
static inline double bench_per_iter(void (*body)(void *, int), void *ctx, int iters, int batches) {
  double t[BENCH_MAX_BATCHES];
  if (batches > BENCH_MAX_BATCHES) batches = BENCH_MAX_BATCHES;
  body(ctx, iters);  // warm-up
  for (int b = 0; b < batches; b++) {
    double t0 = bench_now();
    body(ctx, iters);
    t[b] = (bench_now() - t0) / iters;
  }
  return bench_median(t, batches);
}

#define BENCH_FAIL(...)                                                                            \
  do {                                                                                             \
    fprintf(stderr, __VA_ARGS__);                                                                  \
    fputc('\n', stderr);                                                                           \
    exit(1);                                                                                       \
  } while (0)

#endif
