// The raw CUDA driver measurements the GPU group compares the OpenMP runtime with
// (bench/cuda_raw.c: libcuda.so.1 loaded with dlopen, no CUDA runtime, no link-time dependency).
#ifndef RUSTOMP_CUDA_RAW_H
#define RUSTOMP_CUDA_RAW_H
#include <stddef.h>

/// Loads the driver and makes device 0's primary context current (the context LLVM's CUDA
/// plugin uses too). Returns NULL, or why the driver cannot be used.
const char *raw_init(void);
/// Device-to-device copy bandwidth: `bytes` copied by cuMemcpyDtoD, counted as read + write
/// (2 * bytes moved); the median of `reps` copies, in GB/s.
double raw_d2d_gbps(size_t bytes, int reps);
/// An empty kernel (PTX loaded by cuModuleLoadData) launched by cuLaunchKernel and waited for
/// by cuCtxSynchronize: median microseconds per launch over `batches` batches of `iters`.
double raw_launch_us(int iters, int batches);
/// The same kernel launched on a non-blocking stream and waited for by cuStreamSynchronize (what
/// the OpenMP runtime does per region): the fair ceiling for an empty target region.
double raw_launch_stream_us(int iters, int batches);
/// cuMemcpyHtoD of `bytes` from `host` (pageable memory) to a device buffer: median GB/s.
double raw_h2d_gbps(const void *host, size_t bytes, int reps);
/// cuMemcpyHtoD / cuMemcpyDtoH of `bytes` between pinned host memory (cuMemAllocHost) and the
/// device: the link's speed, the ceiling of every host-device copy. Median GB/s.
double raw_h2d_pinned_gbps(size_t bytes, int reps);
double raw_d2h_pinned_gbps(size_t bytes, int reps);
/// cuMemHostRegister (portable) / cuMemHostUnregister of the caller's memory.
void raw_host_register(void *host, size_t bytes);
void raw_host_unregister(void *host);
/// Checks on the hardware what the CUDA plugin's fake driver claims of cuPointerGetAttributes
/// (host-plugins/cuda/src/tests.rs, REAL_DRIVER): NULL, or what the driver answered instead.
const char *raw_pointer_claims(void);

#ifdef _OPENMP
// For the OpenMP programs of the GPU group (cuda_raw.c itself is plain C).
#include "bench.h"
#include <omp.h>
/// Stops benchmark `name` unless target regions really run on a GPU and the raw driver loads:
/// both columns must measure the device, and the raw rows need the driver.
static inline void gpu_bench_require_device(const char *name) {
  int initial = 1;
#pragma omp target map(from: initial)
  initial = omp_is_initial_device();
  if (initial) BENCH_FAIL("%s: the target region ran on the host", name);
  const char *why = raw_init();
  if (why) BENCH_FAIL("%s: %s", name, why);
}
#endif

#endif
