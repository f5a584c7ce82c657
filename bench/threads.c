// Group 3: many host threads issuing target regions at once.
//
//   threads_T   T host threads (`parallel num_threads(T)`) share a fixed number of synchronous
//               regions (`omp for`), each region mapping one thread-private scalar tofrom:
//               regions per second over all threads. The machine's core count bounds the
//               useful T; beyond it this measures how the runtime behaves when oversubscribed
//               (its locks held by preempted threads).
//   transfers_T T host threads each run target regions mapping their own 8 MiB buffer tofrom
//               (a copy in and a copy out per region, different entries of one device):
//               bytes copied per second over all threads. Copies of different entries
//               overlap when the runtime performs them outside its mapping-table lock; held
//               across them, the rate stays at one thread's whatever T is.
#include "bench.h"
#include <omp.h>
#include <stdint.h>

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

#define TRANSFER_BYTES (8u << 20)

static double transfer_bytes_per_second(int threads, int regions, int batches) {
  double rate[BENCH_MAX_BATCHES];
  char *buffers[64];
  for (int t = 0; t < threads; t++) {
    buffers[t] = malloc(TRANSFER_BYTES);
    if (!buffers[t]) BENCH_FAIL("transfers_%d: out of memory", threads);
    memset(buffers[t], t, TRANSFER_BYTES);
  }
  long ran = 0;
  for (int b = -1; b < batches; b++) {  // b == -1: warm-up
    double t0 = bench_now();
#pragma omp parallel num_threads(threads) reduction(+: ran)
    {
      char *mine = buffers[omp_get_thread_num()];
      for (int r = 0; r < regions; r++) {
#pragma omp target map(tofrom: mine[0:TRANSFER_BYTES])
        mine[r] += 1;
        ran++;
      }
    }
    double t = bench_now() - t0;
    if (b >= 0) rate[b] = 2.0 * TRANSFER_BYTES * regions * threads / t;
  }
  for (int t = 0; t < threads; t++) {
    for (int r = 0; r < regions; r++)
      if (buffers[t][r] != (char)(t + batches + 1)) BENCH_FAIL("transfers_%d: thread %d byte %d is %d", threads, t, r, buffers[t][r]);
    free(buffers[t]);
  }
  if (ran != (long)threads * regions * (batches + 1)) BENCH_FAIL("transfers_%d: %ld regions ran", threads, ran);
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
  int transfer_counts[] = {1, 2, 4};
  for (int c = 0; c < 3; c++) {
    char name[32];
    snprintf(name, sizeof name, "transfers_%d", transfer_counts[c]);
    if (!bench_want(name)) continue;
    bench_result(name, transfer_bytes_per_second(transfer_counts[c], bench_pick(40, 10), batches), "B/s");
  }
  return 0;
}
