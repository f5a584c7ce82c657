// Group 3: many host threads issuing target regions at once.
//
//   threads_T   T host threads (`parallel num_threads(T)`) share a fixed number of synchronous
//               regions (`omp for`), each region mapping one thread-private scalar tofrom:
//               regions per second over all threads. The machine's core count bounds the
//               useful T; beyond it this measures how the runtime behaves when oversubscribed
//               (its locks held by preempted threads).
//   beside_transfers
//               two host threads on one device: one copies its own mapped 64 MiB buffer to the
//               device and back (`target update to` / `from`, no allocation), the other runs
//               small regions mapping a scalar until the copies are done. Two rows: the small
//               regions per second (`_small`) and the big copies' bytes per second (`_copies`).
//               A runtime that holds its mapping-table lock across copies makes one thread
//               wait for the other: the small regions stall for every copy, or (the lock
//               being unfair) the copies wait for the small regions; one that copies outside
//               it (different entries) lets both go on.
#include "bench.h"
#include <omp.h>
#include <string.h>

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

#define BIG_BYTES (64u << 20)

static void beside_transfers(int big_regions, int batches, double *small_rate, double *copy_rate) {
  double rate[BENCH_MAX_BATCHES], copies[BENCH_MAX_BATCHES];
  char *big = malloc(BIG_BYTES);
  if (!big) BENCH_FAIL("beside_transfers: out of memory");
  memset(big, 0, BIG_BYTES);
#pragma omp target enter data map(to: big[0:BIG_BYTES])
  for (int b = -1; b < batches; b++) {  // b == -1: warm-up
    volatile int done = 0;
    long small = 0;
    double elapsed = 0, copying = 0;
#pragma omp parallel num_threads(2)
    {
      if (omp_get_thread_num() == 0) {
        double t0 = bench_now();
        for (int r = 0; r < big_regions; r++) {
          big[r] += 1;
#pragma omp target update to(big[0:BIG_BYTES])
#pragma omp target update from(big[0:BIG_BYTES])
        }
        copying = bench_now() - t0;
#pragma omp atomic write
        done = 1;
      } else {
        int mine = 0;
        double t0 = bench_now();
        int finished = 0;
        while (!finished) {
#pragma omp target map(tofrom: mine)
          mine++;
#pragma omp atomic read
          finished = done;
        }
        elapsed = bench_now() - t0;
        small = mine;
      }
    }
    if (b >= 0) {
      rate[b] = small / elapsed;
      copies[b] = 2.0 * BIG_BYTES * big_regions / copying;
    }
  }
#pragma omp target exit data map(release: big[0:BIG_BYTES])
  for (int r = 0; r < big_regions; r++)
    if (big[r] != batches + 1) BENCH_FAIL("beside_transfers: byte %d is %d", r, big[r]);
  free(big);
  *small_rate = bench_median(rate, batches);
  *copy_rate = bench_median(copies, batches);
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
  if (bench_want("beside_transfers")) {
    double small, copies;
    beside_transfers(bench_pick(20, 6), batches, &small, &copies);
    bench_result("beside_transfers_small", small, "regions/s");
    bench_result("beside_transfers_copies", copies, "B/s");
  }
  return 0;
}
