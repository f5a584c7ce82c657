// Group 3: many host threads issuing target regions at once.
//
//   threads_T   T host threads (`parallel num_threads(T)`) share a fixed number of synchronous
//               regions (`omp for`), each region mapping one thread-private scalar tofrom:
//               regions per second over all threads. The machine's core count bounds the
//               useful T; beyond it this measures how the runtime behaves when oversubscribed
//               (its locks held by preempted threads).
#include "bench.h"
#include <omp.h>

static int sink;

static double regions_per_second(int threads, int regions, int batches) {
  double rate[BENCH_MAX_BATCHES];
  sink = 0;
  for (int b = -1; b < batches; b++) {  // b == -1: warm-up (creates the team's threads)
    double t0 = bench_now();
#pragma omp parallel num_threads(threads)
    {
      int mine = 0;
#pragma omp for schedule(static)
      for (int i = 0; i < regions; i++) {
#pragma omp target map(tofrom: mine)
        mine++;
      }
#pragma omp atomic
      sink += mine;
    }
    double t = bench_now() - t0;
    if (b >= 0) rate[b] = regions / t;
  }
  if (sink != regions * (batches + 1)) BENCH_FAIL("threads_%d: %d regions ran, expected %d", threads, sink, regions * (batches + 1));
  return bench_median(rate, batches);
}

int main(int argc, char **argv) {
  bench_init(argc, argv);
  int regions = bench_pick(40000, 5000);
  int batches = bench_pick(7, 3);
  int counts[] = {1, 2, 8, 32};
  for (int c = 0; c < 4; c++) {
    char name[32];
    snprintf(name, sizeof name, "threads_%d", counts[c]);
    if (!bench_want(name)) continue;
    bench_result(name, regions_per_second(counts[c], regions, batches), "regions/s");
  }
  return 0;
}
