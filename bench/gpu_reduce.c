// The GPU group, reduction (NVIDIA, compiled for sm_90), apart from gpu.c because it needs the
// device runtime's reduction entry points (__kmpc_nvptx_teams_reduce_nowait_v2 and friends).
//
//   reduction           `teams distribute parallel for reduction(+:sum)` over 1 GiB of doubles
//                       (omp_target_alloc, is_device_ptr): GB/s read
//   reduction_fraction  reduction / the cuMemcpyDtoD bandwidth of 1 GiB measured in this run
//                       (read + write counted, as gpu.c's d2d_copy)
#include "bench.h"
#include "cuda_raw.h"
#include <omp.h>

#define REDUCE_N ((size_t)1 << 27)  // 1 GiB of doubles

int main(int argc, char **argv) {
  bench_init(argc, argv);
  int reps = bench_pick(11, 3);
  int dev = omp_get_default_device();
  gpu_bench_require_device("gpu_reduce");
  double copy = raw_d2d_gbps(REDUCE_N * sizeof(double), reps);

  if (bench_want("reduction")) {
    double *x = omp_target_alloc(REDUCE_N * sizeof(double), dev);
    if (!x) BENCH_FAIL("gpu_reduce: omp_target_alloc of 1 GiB failed");
#pragma omp target teams distribute parallel for is_device_ptr(x)
    for (size_t i = 0; i < REDUCE_N; i++) x[i] = 1.0;
    double rate[BENCH_MAX_BATCHES];
    for (int r = -1; r < reps; r++) {
      double sum = 0.0, t0 = bench_now();
#pragma omp target teams distribute parallel for reduction(+: sum) is_device_ptr(x) map(tofrom: sum)
      for (size_t i = 0; i < REDUCE_N; i++) sum += x[i];
      if (r >= 0) rate[r] = (double)REDUCE_N * sizeof(double) / (bench_now() - t0) * 1e-9;
      if (sum != (double)REDUCE_N) BENCH_FAIL("gpu_reduce: reduction computed %g, expected %zu", sum, REDUCE_N);
    }
    double reduction = bench_median(rate, reps);
    bench_result("reduction", reduction, "GB/s");
    bench_result("reduction_fraction", reduction / copy, "of_copy");
    omp_target_free(x, dev);
  }

  return 0;
}
