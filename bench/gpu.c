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
//   raw_launch_stream an empty kernel by cuLaunchKernel on a stream + cuStreamSynchronize: the
//                     fair ceiling of launch_empty (what a runtime must do per region)
//   launch_spmd       `target parallel` with an empty body (an SPMD kernel): microseconds
//   launch_generic    `target` whose sequential part stores a value, then one empty
//                     `parallel` (a generic-mode kernel: its state machine): microseconds
//   h2d, d2h          `target update to/from` of 256 MiB of pageable host memory: GB/s
//   raw_h2d           cuMemcpyHtoD of the same pageable buffer (the driver's own path): GB/s
//   raw_h2d_pinned, raw_d2h_pinned
//                     cuMemcpyHtoD/DtoH of 256 MiB of pinned memory: the link, the ceiling
//   h2d_fraction, d2h_fraction
//                     h2d / raw_h2d_pinned, d2h / raw_d2h_pinned
//   h2d_locked, d2h_locked
//                     the same updates of the buffer after llvm_omp_target_lock_mem (what
//                     libomp's pinned allocator calls): GB/s, pinned speed without staging
//   h2d_registered    the same update of the buffer the program pinned with cuMemHostRegister
//                     behind the runtime's back: GB/s
//   driver_pointer_claims
//                     1 when cuPointerGetAttributes answers as the plugin's fake driver claims
//                     (pageable memory unknown, a pinned range one buffer of host memory); the
//                     run stops with what it answered otherwise
#include "bench.h"
#include "cuda_raw.h"
#include <omp.h>

void *llvm_omp_target_lock_mem(void *ptr, size_t size, int device_num);
void llvm_omp_target_unlock_mem(void *ptr, int device_num);

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

static void spmd_regions(void *ctx, int iters) {
  (void)ctx;
  for (int i = 0; i < iters; i++) {
#pragma omp target parallel
    {}
  }
}

static void generic_regions(void *ctx, int iters) {
  int *seen = ctx;
  for (int i = 0; i < iters; i++) {
    // The store before the region keeps the kernel generic: the main thread runs the
    // sequential part, the workers wait in the state machine for the parallel region.
#pragma omp target map(tofrom: seen[0:1])
    {
      seen[0] = i;
#pragma omp parallel
      {}
    }
  }
}

/// Median GB/s of `reps` `target update` copies of `bytes` at `buf` (mapped), one way.
static double update_gbps(char *buf, size_t bytes, int reps, int to_device) {
  double rate[BENCH_MAX_BATCHES];
  for (int r = -1; r < reps; r++) {
    double t0 = bench_now();
    if (to_device) {
#pragma omp target update to(buf[0:bytes])
    } else {
#pragma omp target update from(buf[0:bytes])
    }
    if (r >= 0) rate[r] = (double)bytes / (bench_now() - t0) * 1e-9;
  }
  return bench_median(rate, reps);
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
  if (bench_want("raw_launch_stream"))
    bench_result("raw_launch_stream", raw_launch_stream_us(iters, reps), "us/launch");
  if (bench_want("launch_spmd"))
    bench_result("launch_spmd", bench_per_iter(spmd_regions, NULL, iters, reps) * 1e6, "us/region");
  if (bench_want("launch_generic")) {
    int seen = -1;
    bench_result("launch_generic", bench_per_iter(generic_regions, &seen, iters, reps) * 1e6, "us/region");
  }

  if (bench_want("h2d") || bench_want("d2h")) {
    char *buf = malloc(H2D_BYTES);
    if (!buf) BENCH_FAIL("gpu: out of memory");
    memset(buf, 1, H2D_BYTES);
    double h2d, d2h;
#pragma omp target data map(alloc: buf[0:H2D_BYTES])
    {
      h2d = update_gbps(buf, H2D_BYTES, reps, 1);
      d2h = update_gbps(buf, H2D_BYTES, reps, 0);
    }
    double pinned_h2d = raw_h2d_pinned_gbps(H2D_BYTES, reps), pinned_d2h = raw_d2h_pinned_gbps(H2D_BYTES, reps);
    bench_result("h2d", h2d, "GB/s");
    bench_result("d2h", d2h, "GB/s");
    bench_result("raw_h2d", raw_h2d_gbps(buf, H2D_BYTES, reps), "GB/s");
    bench_result("raw_h2d_pinned", pinned_h2d, "GB/s");
    bench_result("raw_d2h_pinned", pinned_d2h, "GB/s");
    bench_result("h2d_fraction", h2d / pinned_h2d, "of_pinned");
    bench_result("d2h_fraction", d2h / pinned_d2h, "of_pinned");
    free(buf);
  }

  if (bench_want("h2d_locked") || bench_want("d2h_locked") || bench_want("h2d_registered")) {
    char *buf = malloc(H2D_BYTES);
    if (!buf) BENCH_FAIL("gpu: out of memory");
    memset(buf, 1, H2D_BYTES);
    double h2d, d2h, registered;
    if (!llvm_omp_target_lock_mem(buf, H2D_BYTES, dev)) BENCH_FAIL("gpu: llvm_omp_target_lock_mem failed");
#pragma omp target data map(alloc: buf[0:H2D_BYTES])
    {
      h2d = update_gbps(buf, H2D_BYTES, reps, 1);
      d2h = update_gbps(buf, H2D_BYTES, reps, 0);
    }
    llvm_omp_target_unlock_mem(buf, dev);
    raw_host_register(buf, H2D_BYTES);
#pragma omp target data map(alloc: buf[0:H2D_BYTES])
    registered = update_gbps(buf, H2D_BYTES, reps, 1);
    raw_host_unregister(buf);
    bench_result("h2d_locked", h2d, "GB/s");
    bench_result("d2h_locked", d2h, "GB/s");
    bench_result("h2d_registered", registered, "GB/s");
    free(buf);
  }

  if (bench_want("driver_pointer_claims")) {
    const char *why = raw_pointer_claims();
    if (why) BENCH_FAIL("gpu: %s", why);
    bench_result("driver_pointer_claims", 1, "ok");
  }
  return 0;
}
