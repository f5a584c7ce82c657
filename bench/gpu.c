// The GPU group (NVIDIA, compiled for sm_90): the OpenMP runtime against the CUDA driver
// used directly (cuda_raw.c), in the same process. The reduction is in gpu_reduce.c (it needs
// the device runtime's reduction entry points).
//
//   d2d_copy          cuMemcpyDtoD of 1 GiB, read + write counted: the bandwidth ceiling
//   triad             `a[i] = b[i] + s * c[i]` over 3 x 512 MiB of doubles (omp_target_alloc,
//                     is_device_ptr; 24 bytes per element): GB/s
//   triad_fraction    triad / d2d_copy
//   launch_empty      a synchronous empty `target` region: microseconds
//   raw_launch        an empty kernel by cuLaunchKernel + cuCtxSynchronize: microseconds
//   h2d               `target update to` of 256 MiB of pageable host memory: GB/s
//   raw_h2d           cuMemcpyHtoD of the same buffer: GB/s
#include "bench.h"
#include "cuda_raw.h"
#include <omp.h>

#define STREAM_N ((size_t)1 << 26)     // 512 MiB per array
#define COPY_BYTES ((size_t)1 << 30)
#define H2D_BYTES ((size_t)256 << 20)  // 256 MiB

static void empty_regions(void *ctx, int iters) {
  (void)ctx;
  for (int i = 0; i < iters; i++) {
#pragma omp target
    {}
  }
}

int main(int argc, char **argv) {
  bench_init(argc, argv);
  int reps = bench_pick(11, 3);
  int dev = omp_get_default_device();
  gpu_bench_require_device("gpu");

  double copy = raw_d2d_gbps(COPY_BYTES, reps);
  if (bench_want("d2d_copy")) bench_result("d2d_copy", copy, "GB/s");

  if (bench_want("triad")) {
    double *a = omp_target_alloc(STREAM_N * sizeof(double), dev);
    double *b = omp_target_alloc(STREAM_N * sizeof(double), dev);
    double *c = omp_target_alloc(STREAM_N * sizeof(double), dev);
    if (!a || !b || !c) BENCH_FAIL("gpu: omp_target_alloc of 3 x 512 MiB failed");
#pragma omp target teams distribute parallel for is_device_ptr(a, b, c)
    for (size_t i = 0; i < STREAM_N; i++) {
      a[i] = 0.0;
      b[i] = 1.0;
      c[i] = 2.0;
    }
    double rate[BENCH_MAX_BATCHES];
    for (int r = -1; r < reps; r++) {
      double s = 3.0, t0 = bench_now();
#pragma omp target teams distribute parallel for is_device_ptr(a, b, c)
      for (size_t i = 0; i < STREAM_N; i++) a[i] = b[i] + s * c[i];
      if (r >= 0) rate[r] = 3.0 * STREAM_N * sizeof(double) / (bench_now() - t0) * 1e-9;
    }
    double check = 0;
#pragma omp target map(from: check) is_device_ptr(a)
    check = a[STREAM_N - 1];
    if (check != 7.0) BENCH_FAIL("gpu: triad computed %g, expected 7", check);
    double triad = bench_median(rate, reps);
    bench_result("triad", triad, "GB/s");
    bench_result("triad_fraction", triad / copy, "of_copy");
    omp_target_free(a, dev);
    omp_target_free(b, dev);
    omp_target_free(c, dev);
  }

  int iters = bench_pick(2000, 200);
  if (bench_want("launch_empty"))
    bench_result("launch_empty", bench_per_iter(empty_regions, NULL, iters, reps) * 1e6, "us/region");
  if (bench_want("raw_launch")) bench_result("raw_launch", raw_launch_us(iters, reps), "us/launch");

  if (bench_want("h2d")) {
    char *buf = malloc(H2D_BYTES);
    if (!buf) BENCH_FAIL("gpu: out of memory");
    memset(buf, 1, H2D_BYTES);
    double rate[BENCH_MAX_BATCHES];
#pragma omp target data map(alloc: buf[0:H2D_BYTES])
    for (int r = -1; r < reps; r++) {
      double t0 = bench_now();
#pragma omp target update to(buf[0:H2D_BYTES])
      if (r >= 0) rate[r] = (double)H2D_BYTES / (bench_now() - t0) * 1e-9;
    }
    bench_result("h2d", bench_median(rate, reps), "GB/s");
    bench_result("raw_h2d", raw_h2d_gbps(buf, H2D_BYTES, reps), "GB/s");
    free(buf);
  }
  return 0;
}
