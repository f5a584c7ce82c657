// Group 4: `nowait` throughput.
//
//   nowait_regions   one thread (`parallel` + `single`) creates 10 000 independent
//                    `target nowait` regions, each mapping its own array element tofrom, then
//                    waits for all with `taskwait`: regions per second, creation to completion.
//                    The target tasks run on libomp's hidden helper threads (8 by default);
//                    the library under test does the mapping and the launch inside each task.
//   nowait_no_helpers  the same, run with LIBOMP_USE_HIDDEN_HELPER_TASK=0 (the runner sets it):
//                    the target tasks run on the team's own threads, so libomp's hand-off to
//                    the helper threads no longer dominates and the library's part shows.
#include "bench.h"

#define REGIONS 10000

static int slots[REGIONS];

static double nowait_rate(int batches) {
  double rate[BENCH_MAX_BATCHES];
  for (int b = -1; b < batches; b++) {  // b == -1: warm-up
    double t0 = bench_now();
#pragma omp parallel
#pragma omp single
    {
      for (int i = 0; i < REGIONS; i++) {
#pragma omp target nowait map(tofrom: slots[i:1])
        slots[i]++;
      }
#pragma omp taskwait
    }
    double t = bench_now() - t0;
    if (b >= 0) rate[b] = REGIONS / t;
  }
  return bench_median(rate, batches);
}

int main(int argc, char **argv) {
  bench_init(argc, argv);
  int batches = bench_pick(7, 3);
  const char *helpers = getenv("LIBOMP_USE_HIDDEN_HELPER_TASK");
  const char *name = helpers && strcmp(helpers, "0") == 0 ? "nowait_no_helpers" : "nowait_regions";
  if (!bench_want(name)) return 0;
  bench_result(name, nowait_rate(batches), "regions/s");
  for (int i = 0; i < REGIONS; i++)
    if (slots[i] != batches + 1) BENCH_FAIL("nowait: slot %d ran %d times, expected %d", i, slots[i], batches + 1);
  return 0;
}
