// The GPU group's indirect-call rows (NVIDIA, sm_90): calls per second in one kernel of
// `target teams distribute parallel for`, each of N elements making CALLS calls in a chain:
//
//   indirect_direct      a direct call of an out-of-line declare target function
//   indirect_translated  a call through a host function pointer of a 'declare target indirect'
//                        function (mapped table of 2), which the pass plugin translates with
//                        __kmpc_target_translate_fptr before the call
//   indirect_fraction    indirect_translated / indirect_direct
//
// Both columns (ours, LLVM's library) run our device runtime and the pass; the difference
// between the rows is the device-side cost of a translated call.
#include "bench.h"
#include "cuda_raw.h"
#include <omp.h>

#define N (1 << 22)
#define CALLS 16

#pragma omp begin declare target indirect
__attribute__((noinline)) unsigned step_a(unsigned x) { return x * 1664525u + 1013904223u; }
__attribute__((noinline)) unsigned step_b(unsigned x) { return (x ^ (x >> 7)) * 2654435761u; }
#pragma omp end declare target

typedef unsigned (*step_t)(unsigned);

int main(int argc, char **argv) {
  bench_init(argc, argv);
  int reps = bench_pick(11, 3);
  gpu_bench_require_device("gpu_indirect");
  unsigned *out = malloc(N * sizeof(unsigned));
  if (!out) BENCH_FAIL("gpu_indirect: out of memory");
  step_t steps[2] = {step_a, step_b};
  double direct = 0, translated = 0;
#pragma omp target data map(alloc: out[0:N]) map(to: steps)
  {
    double rate[BENCH_MAX_BATCHES];
    if (bench_want("indirect_direct")) {
      for (int r = -1; r < reps; r++) {
        double t0 = bench_now();
#pragma omp target teams distribute parallel for
        for (int i = 0; i < N; i++) {
          unsigned x = (unsigned)i;
          for (int k = 0; k < CALLS; k++) x = (k + i) & 1 ? step_b(x) : step_a(x);
          out[i] = x;
        }
        if (r >= 0) rate[r] = (double)N * CALLS / (bench_now() - t0);
      }
      direct = bench_median(rate, reps);
      bench_result("indirect_direct", direct, "calls/s");
    }
    if (bench_want("indirect_translated")) {
      for (int r = -1; r < reps; r++) {
        double t0 = bench_now();
#pragma omp target teams distribute parallel for
        for (int i = 0; i < N; i++) {
          unsigned x = (unsigned)i;
          for (int k = 0; k < CALLS; k++) x = steps[(k + i) & 1](x);
          out[i] = x;
        }
        if (r >= 0) rate[r] = (double)N * CALLS / (bench_now() - t0);
      }
      translated = bench_median(rate, reps);
      bench_result("indirect_translated", translated, "calls/s");
#pragma omp target update from(out[0:N])
      unsigned x = 5;
      for (int k = 0; k < CALLS; k++) x = (k + 5) & 1 ? step_b(x) : step_a(x);
      if (out[5] != x) BENCH_FAIL("gpu_indirect: translated calls computed %u, expected %u", out[5], x);
    }
  }
  if (direct > 0 && translated > 0) bench_result("indirect_fraction", translated / direct, "of_direct");
  free(out);
  return 0;
}
