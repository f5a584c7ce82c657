// Group 2: the mapping table at scale.
//
//   enter_data_N / exit_data_N   `target enter data map(to: p[0:16])` of N distinct arrays (16
//                                doubles each), then `target exit data map(from: ...)` of each:
//                                time per array, with up to N mappings live
//   lookup_live_N                a `target` region mapping one of N live arrays (picked at
//                                random): the lookup of a present entry in a table of N
//   overlap_sections             inside `target data map(a[0:65536])`, regions mapping
//                                `a[off:256]` with `off` advancing by 128, so each section
//                                overlaps the previous one; all are contained in the enclosing entry
//   update_sections              `target update to(a[off:256])` over the same sections
#include "bench.h"

#define ELEMS 16
#define BIG (1 << 16)
#define SECTION 256

static double **arrays;
static int sink;

/// Enter then exit `n` arrays `passes` times; adds the time of each half to `t_enter`/`t_exit`.
static void enter_exit(int n, int passes, double *t_enter, double *t_exit) {
  for (int p = 0; p < passes; p++) {
    double t0 = bench_now();
    for (int i = 0; i < n; i++) {
      double *a = arrays[i];
#pragma omp target enter data map(to: a[0:ELEMS])
    }
    double t1 = bench_now();
    for (int i = 0; i < n; i++) {
      double *a = arrays[i];
#pragma omp target exit data map(from: a[0:ELEMS])
    }
    *t_enter += t1 - t0;
    *t_exit += bench_now() - t1;
  }
}

static void enter_exit_rows(int n, int batches) {
  char enter_name[64], exit_name[64];
  snprintf(enter_name, sizeof enter_name, "enter_data_%d", n);
  snprintf(exit_name, sizeof exit_name, "exit_data_%d", n);
  if (!bench_want(enter_name) && !bench_want(exit_name)) return;
  // About 20 000 arrays per batch whatever n is, at least one pass.
  int passes = 20000 / n > 0 ? 20000 / n : 1;
  if (bench_quick) passes = (passes + 3) / 4;
  double warm_e = 0, warm_x = 0;
  enter_exit(n, 1, &warm_e, &warm_x);
  double te[BENCH_MAX_BATCHES], tx[BENCH_MAX_BATCHES];
  for (int b = 0; b < batches; b++) {
    te[b] = tx[b] = 0;
    enter_exit(n, passes, &te[b], &tx[b]);
    te[b] /= (double)n * passes;
    tx[b] /= (double)n * passes;
  }
  if (bench_want(enter_name)) bench_result(enter_name, bench_median(te, batches) * 1e9, "ns/array");
  if (bench_want(exit_name)) bench_result(exit_name, bench_median(tx, batches) * 1e9, "ns/array");
}

struct live_ctx {
  int n;
  unsigned state;
};

static void lookup_regions(void *raw, int iters) {
  struct live_ctx *ctx = raw;
  for (int i = 0; i < iters; i++) {
    ctx->state = ctx->state * 1664525u + 1013904223u;
    double *a = arrays[(ctx->state >> 8) % (unsigned)ctx->n];
#pragma omp target map(tofrom: a[0:ELEMS])
    a[0] += 1.0;
  }
}

static void lookup_row(int n, int iters, int batches) {
  char name[64];
  snprintf(name, sizeof name, "lookup_live_%d", n);
  if (!bench_want(name)) return;
  for (int i = 0; i < n; i++) {
    double *a = arrays[i];
#pragma omp target enter data map(to: a[0:ELEMS])
  }
  struct live_ctx ctx = {n, 12345u};
  bench_result(name, bench_per_iter(lookup_regions, &ctx, iters, batches) * 1e9, "ns/region");
  for (int i = 0; i < n; i++) {
    double *a = arrays[i];
#pragma omp target exit data map(release: a[0:ELEMS])
  }
}

static double *big;

static void overlap_regions(void *ctx, int iters) {
  (void)ctx;
  for (int i = 0; i < iters; i++) {
    int off = (i * (SECTION / 2)) % (BIG - SECTION);
#pragma omp target map(tofrom: big[off:SECTION])
    big[off] += 1.0;
  }
}

static void update_sections(void *ctx, int iters) {
  (void)ctx;
  for (int i = 0; i < iters; i++) {
    int off = (i * (SECTION / 2)) % (BIG - SECTION);
#pragma omp target update to(big[off:SECTION])
  }
}

int main(int argc, char **argv) {
  bench_init(argc, argv);
  int batches = bench_pick(9, 3);
  int max_n = 100000;
  arrays = malloc(sizeof *arrays * max_n);
  big = calloc(BIG, sizeof *big);
  if (!arrays || !big) BENCH_FAIL("mapping: out of memory");
  for (int i = 0; i < max_n; i++) {
    arrays[i] = calloc(ELEMS, sizeof(double));
    if (!arrays[i]) BENCH_FAIL("mapping: out of memory");
  }

  int sizes[] = {1, 1000, 100000};
  for (int s = 0; s < 3; s++) enter_exit_rows(sizes[s], batches);

  int iters = bench_pick(4000, 1000);
  lookup_row(1, iters, batches);
  lookup_row(100000, iters, batches);

  if (bench_want("overlap_sections") || bench_want("update_sections")) {
#pragma omp target data map(tofrom: big[0:BIG])
    {
      if (bench_want("overlap_sections"))
        bench_result("overlap_sections", bench_per_iter(overlap_regions, NULL, iters, batches) * 1e9, "ns/region");
      if (bench_want("update_sections"))
        bench_result("update_sections", bench_per_iter(update_sections, NULL, iters, batches) * 1e9, "ns/update");
    }
  }
  for (int i = 0; i < max_n; i++) sink += (int)arrays[i][0];
  return sink == -1;
}
