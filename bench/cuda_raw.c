// Raw CUDA driver measurements for the GPU group: see cuda_raw.h. Compiled without OpenMP
// offload, against cuda.h from target/tools/cuda/include; every driver entry point is looked up
// with dlsym, so the benchmark programs build on machines without a driver.
#include "cuda_raw.h"
#include "bench.h"
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct {
  __typeof__(cuInit) *init;
  __typeof__(cuDeviceGet) *device_get;
  __typeof__(cuDevicePrimaryCtxRetain) *primary_ctx_retain;
  __typeof__(cuCtxSetCurrent) *ctx_set_current;
  __typeof__(cuCtxSynchronize) *ctx_synchronize;
  __typeof__(cuMemAlloc) *mem_alloc;
  __typeof__(cuMemFree) *mem_free;
  __typeof__(cuMemcpyDtoD) *memcpy_dtod;
  __typeof__(cuMemcpyHtoD) *memcpy_htod;
  __typeof__(cuModuleLoadData) *module_load_data;
  __typeof__(cuModuleGetFunction) *module_get_function;
  __typeof__(cuLaunchKernel) *launch_kernel;
  __typeof__(cuStreamCreate) *stream_create;
  __typeof__(cuStreamSynchronize) *stream_synchronize;
  __typeof__(cuMemAllocHost) *mem_alloc_host;
  __typeof__(cuMemFreeHost) *mem_free_host;
  __typeof__(cuMemcpyDtoH) *memcpy_dtoh;
  __typeof__(cuMemHostRegister) *mem_host_register;
  __typeof__(cuMemHostUnregister) *mem_host_unregister;
  __typeof__(cuPointerGetAttributes) *pointer_get_attributes;
} cu;

static const char empty_ptx[] =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    ".visible .entry rustomp_bench_empty()\n"
    "{\n"
    "  ret;\n"
    "}\n";

#define CHECK(call)                                                                                \
  do {                                                                                             \
    CUresult rc_ = (call);                                                                         \
    if (rc_ != CUDA_SUCCESS) BENCH_FAIL("cuda_raw: %s failed with CUresult %d", #call, (int)rc_);  \
  } while (0)

const char *raw_init(void) {
  static char why[256];
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(why, sizeof why, "cannot load libcuda.so.1: %s", dlerror());
    return why;
  }
  struct {
    void **slot;
    const char *name;
  } symbols[] = {
      {(void **)&cu.init, "cuInit"},
      {(void **)&cu.device_get, "cuDeviceGet"},
      {(void **)&cu.primary_ctx_retain, "cuDevicePrimaryCtxRetain"},
      {(void **)&cu.ctx_set_current, "cuCtxSetCurrent"},
      {(void **)&cu.ctx_synchronize, "cuCtxSynchronize"},
      {(void **)&cu.mem_alloc, "cuMemAlloc_v2"},
      {(void **)&cu.mem_free, "cuMemFree_v2"},
      {(void **)&cu.memcpy_dtod, "cuMemcpyDtoD_v2"},
      {(void **)&cu.memcpy_htod, "cuMemcpyHtoD_v2"},
      {(void **)&cu.module_load_data, "cuModuleLoadData"},
      {(void **)&cu.module_get_function, "cuModuleGetFunction"},
      {(void **)&cu.launch_kernel, "cuLaunchKernel"},
      {(void **)&cu.stream_create, "cuStreamCreate"},
      {(void **)&cu.stream_synchronize, "cuStreamSynchronize"},
      {(void **)&cu.mem_alloc_host, "cuMemAllocHost_v2"},
      {(void **)&cu.mem_free_host, "cuMemFreeHost"},
      {(void **)&cu.memcpy_dtoh, "cuMemcpyDtoH_v2"},
      {(void **)&cu.mem_host_register, "cuMemHostRegister_v2"},
      {(void **)&cu.mem_host_unregister, "cuMemHostUnregister"},
      {(void **)&cu.pointer_get_attributes, "cuPointerGetAttributes"},
  };
  for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
    *symbols[i].slot = dlsym(lib, symbols[i].name);
    if (!*symbols[i].slot) {
      snprintf(why, sizeof why, "libcuda.so.1 has no %s", symbols[i].name);
      return why;
    }
  }
  CUdevice dev;
  CUcontext ctx;
  CUresult rc = cu.init(0);
  if (rc == CUDA_SUCCESS) rc = cu.device_get(&dev, 0);
  if (rc == CUDA_SUCCESS) rc = cu.primary_ctx_retain(&ctx, dev);
  if (rc == CUDA_SUCCESS) rc = cu.ctx_set_current(ctx);
  if (rc != CUDA_SUCCESS) {
    snprintf(why, sizeof why, "no usable CUDA device 0 (CUresult %d)", (int)rc);
    return why;
  }
  return NULL;
}

double raw_d2d_gbps(size_t bytes, int reps) {
  CUdeviceptr src, dst;
  CHECK(cu.mem_alloc(&src, bytes));
  CHECK(cu.mem_alloc(&dst, bytes));
  CHECK(cu.memcpy_dtod(dst, src, bytes));  // warm-up
  CHECK(cu.ctx_synchronize());
  double rate[BENCH_MAX_BATCHES];
  if (reps > BENCH_MAX_BATCHES) reps = BENCH_MAX_BATCHES;
  for (int r = 0; r < reps; r++) {
    double t0 = bench_now();
    CHECK(cu.memcpy_dtod(dst, src, bytes));
    CHECK(cu.ctx_synchronize());
    rate[r] = 2.0 * (double)bytes / (bench_now() - t0) * 1e-9;
  }
  CHECK(cu.mem_free(src));
  CHECK(cu.mem_free(dst));
  return bench_median(rate, reps);
}

static void raw_launches(void *ctx, int iters) {
  CUfunction f = ctx;
  for (int i = 0; i < iters; i++) {
    CHECK(cu.launch_kernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cu.ctx_synchronize());
  }
}

double raw_launch_us(int iters, int batches) {
  CUmodule module;
  CUfunction f;
  CHECK(cu.module_load_data(&module, empty_ptx));
  CHECK(cu.module_get_function(&f, module, "rustomp_bench_empty"));
  return bench_per_iter(raw_launches, f, iters, batches) * 1e6;
}

struct stream_launch {
  CUfunction f;
  CUstream stream;
};

static void raw_stream_launches(void *ctx, int iters) {
  struct stream_launch *l = ctx;
  for (int i = 0; i < iters; i++) {
    CHECK(cu.launch_kernel(l->f, 1, 1, 1, 1, 1, 1, 0, l->stream, NULL, NULL));
    CHECK(cu.stream_synchronize(l->stream));
  }
}

double raw_launch_stream_us(int iters, int batches) {
  CUmodule module;
  struct stream_launch l;
  CHECK(cu.module_load_data(&module, empty_ptx));
  CHECK(cu.module_get_function(&l.f, module, "rustomp_bench_empty"));
  CHECK(cu.stream_create(&l.stream, CU_STREAM_NON_BLOCKING));
  return bench_per_iter(raw_stream_launches, &l, iters, batches) * 1e6;
}

/// Median GB/s of `reps` copies of `bytes` between pinned host memory and the device.
static double raw_pinned_gbps(size_t bytes, int reps, int to_device) {
  CUdeviceptr dev;
  void *host;
  CHECK(cu.mem_alloc(&dev, bytes));
  CHECK(cu.mem_alloc_host(&host, bytes));
  memset(host, 1, bytes);
  double rate[BENCH_MAX_BATCHES];
  if (reps > BENCH_MAX_BATCHES) reps = BENCH_MAX_BATCHES;
  for (int r = -1; r < reps; r++) {
    double t0 = bench_now();
    if (to_device)
      CHECK(cu.memcpy_htod(dev, host, bytes));
    else
      CHECK(cu.memcpy_dtoh(host, dev, bytes));
    if (r >= 0) rate[r] = (double)bytes / (bench_now() - t0) * 1e-9;
  }
  CHECK(cu.mem_free_host(host));
  CHECK(cu.mem_free(dev));
  return bench_median(rate, reps);
}

double raw_h2d_pinned_gbps(size_t bytes, int reps) { return raw_pinned_gbps(bytes, reps, 1); }
double raw_d2h_pinned_gbps(size_t bytes, int reps) { return raw_pinned_gbps(bytes, reps, 0); }

double raw_h2d_gbps(const void *host, size_t bytes, int reps) {
  CUdeviceptr dst;
  CHECK(cu.mem_alloc(&dst, bytes));
  CHECK(cu.memcpy_htod(dst, host, bytes));  // warm-up
  double rate[BENCH_MAX_BATCHES];
  if (reps > BENCH_MAX_BATCHES) reps = BENCH_MAX_BATCHES;
  for (int r = 0; r < reps; r++) {
    double t0 = bench_now();
    CHECK(cu.memcpy_htod(dst, host, bytes));
    rate[r] = (double)bytes / (bench_now() - t0) * 1e-9;
  }
  CHECK(cu.mem_free(dst));
  return bench_median(rate, reps);
}

void raw_host_register(void *host, size_t bytes) { CHECK(cu.mem_host_register(host, bytes, CU_MEMHOSTREGISTER_PORTABLE)); }
void raw_host_unregister(void *host) { CHECK(cu.mem_host_unregister(host)); }

/// What cuPointerGetAttributes answers for `address`: memory type and buffer id.
static void pointer_kind(const void *address, unsigned *type, unsigned long long *id) {
  CUpointer_attribute attributes[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_BUFFER_ID};
  *type = 0;
  *id = 0;
  void *data[2] = {type, id};
  CHECK(cu.pointer_get_attributes(2, attributes, data, (CUdeviceptr)(uintptr_t)address));
}

const char *raw_pointer_claims(void) {
  static char why[512];
  enum { BYTES = 3 << 20 };
  char *pageable = malloc(BYTES), *registered = malloc(BYTES);
  void *allocated;
  if (!pageable || !registered) return "out of memory";
  memset(pageable, 1, BYTES);
  memset(registered, 1, BYTES);
  CHECK(cu.mem_alloc_host(&allocated, BYTES));
  raw_host_register(registered, BYTES);
  unsigned type[6];
  unsigned long long id[6];
  const void *at[6] = {pageable, pageable + BYTES - 1, registered, registered + BYTES - 1,
                       allocated, (char *)allocated + BYTES - 1};
  for (int i = 0; i < 6; i++) pointer_kind(at[i], &type[i], &id[i]);
  raw_host_unregister(registered);
  CHECK(cu.mem_free_host(allocated));
  free(pageable);
  free(registered);
  int ok = type[0] == 0 && id[0] == 0 && type[1] == 0 && id[1] == 0;
  for (int i = 2; i < 6; i += 2)
    ok = ok && type[i] == CU_MEMORYTYPE_HOST && id[i] != 0 && type[i + 1] == type[i] && id[i + 1] == id[i];
  if (ok) return NULL;
  snprintf(why, sizeof why,
           "cuPointerGetAttributes answered (memory type, buffer id): pageable first/last byte "
           "(%u, %llu) (%u, %llu), cuMemHostRegister range (%u, %llu) (%u, %llu), cuMemAllocHost "
           "range (%u, %llu) (%u, %llu); the plugin expects (0, 0) for pageable memory and "
           "CU_MEMORYTYPE_HOST (1) with one nonzero id across each pinned range",
           type[0], id[0], type[1], id[1], type[2], id[2], type[3], id[3], type[4], id[4], type[5], id[5]);
  return why;
}
