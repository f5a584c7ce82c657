// `cargo xtask bench remote`: remote offload (issue 26) against plain MPI between the same two
// ranks, in one run. Started as `mpirun -np 1 rustomp-proxy : -np 1 remote` with the
// application's own CPU devices hidden (RUSTOMP_HOST_DEVICES=0), so device 0 is the proxy's.
//
// For each measurement the program prints our time and plain MPI's (the library's
// `__rustomp_remote_baseline`, MPI_Send/MPI_Recv between this rank and the proxy's), as
// `RESULT` lines (bench.h):
//   launch_us / mpi_roundtrip_us   an empty target region against an 8-byte ping-pong;
//   to_<N>MiB_GBs / mpi_to_<N>MiB_GBs      omp_target_memcpy host -> remote device, N MiB,
//                                           against MPI_Send of N MiB (then one empty reply);
//   from_<N>MiB_GBs / mpi_from_<N>MiB_GBs  the other way.
// The runner prints the ratios.
#include "bench.h"
#include <omp.h>

int __rustomp_remote_baseline(int device, int mode, size_t bytes, int iterations, double *seconds);

typedef struct {
  int dev;
  void *host, *device;
  size_t bytes;
  int mode;
} Ctx;

static void launch(void *p, int iters) {
  Ctx *c = p;
  for (int i = 0; i < iters; i++) {
#pragma omp target device(c->dev)
    {
    }
  }
}

static void copy(void *p, int iters) {
  Ctx *c = p;
  int host = omp_get_initial_device();
  for (int i = 0; i < iters; i++) {
    int rc = c->mode == 1
                 ? omp_target_memcpy(c->device, c->host, c->bytes, 0, 0, c->dev, host)
                 : omp_target_memcpy(c->host, c->device, c->bytes, 0, 0, host, c->dev);
    if (rc) BENCH_FAIL("omp_target_memcpy of %zu bytes failed", c->bytes);
  }
}

static void baseline(void *p, int iters) {
  Ctx *c = p;
  double s;
  if (__rustomp_remote_baseline(c->dev, c->mode, c->bytes, iters, &s))
    BENCH_FAIL("the plain MPI baseline failed (is device %d remote?)", c->dev);
}

int main(int argc, char **argv) {
  bench_init(argc, argv);
  if (omp_get_num_devices() < 1) BENCH_FAIL("no device: run under mpirun with a rustomp-proxy");
  Ctx c = {.dev = 0};
  int batches = bench_pick(9, 5);
  // Latency: an empty region (one packed launch message and its completion) against an
  // MPI round trip of 8 bytes.
  launch(&c, 10);
  if (bench_want("launch")) {
    c.bytes = 8;
    c.mode = 0;
    int iters = bench_pick(2000, 300);
    double ours = bench_per_iter(launch, &c, iters, batches);
    double mpi = bench_per_iter(baseline, &c, iters, batches);
    bench_result("launch_us", ours * 1e6, "us");
    bench_result("mpi_roundtrip_us", mpi * 1e6, "us");
  }
  // Bandwidth, both ways.
  static const int mib[] = {1, 4, 16, 64};
  for (int k = 0; k < 4; k++) {
    size_t bytes = (size_t)mib[k] << 20;
    if (bench_quick && mib[k] > 16) break;
    c.bytes = bytes;
    c.host = malloc(bytes);
    c.device = omp_target_alloc(bytes, c.dev);
    if (!c.host || !c.device) BENCH_FAIL("cannot allocate %zu bytes", bytes);
    memset(c.host, 1, bytes);
    int iters = bench_pick(mib[k] >= 16 ? 10 : 40, mib[k] >= 16 ? 4 : 10);
    for (c.mode = 1; c.mode <= 2; c.mode++) {
      const char *way = c.mode == 1 ? "to" : "from";
      char name[64], mpi_name[64];
      snprintf(name, sizeof name, "%s_%dMiB_GBs", way, mib[k]);
      snprintf(mpi_name, sizeof mpi_name, "mpi_%s_%dMiB_GBs", way, mib[k]);
      if (!bench_want(name)) continue;
      double ours = bench_per_iter(copy, &c, iters, batches);
      double mpi = bench_per_iter(baseline, &c, iters, batches);
      bench_result(name, (double)bytes / ours * 1e-9, "GB/s");
      bench_result(mpi_name, (double)bytes / mpi * 1e-9, "GB/s");
    }
    omp_target_free(c.device, c.dev);
    free(c.host);
  }
  return 0;
}
