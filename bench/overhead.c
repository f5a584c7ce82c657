// Group 1: host overhead of one target region on the CPU plugin (x86_64 offload image).
// Every region is synchronous; the body does next to nothing, so the time is the runtime's:
// resolving the device and kernel, mapping, the launch itself, and unmapping.
//
//   empty_region   `target` with no map clause
//   scalars_N      `target map(tofrom: s0, ..., sN-1)` of N int scalars: per scalar an
//                  allocation, a copy in, a copy out and a free
//   present_8      the same 8 scalars, already mapped by an enclosing `target data`: only
//                  lookups and reference counting
#include "bench.h"

#define C8(p) p##0, p##1, p##2, p##3, p##4, p##5, p##6, p##7
#define C64 C8(a), C8(b), C8(c), C8(d), C8(e), C8(f), C8(g), C8(h)
#define INC8(p) p##0++; p##1++; p##2++; p##3++; p##4++; p##5++; p##6++; p##7++;
#define Z8(p) p##0 = p##1 = p##2 = p##3 = p##4 = p##5 = p##6 = p##7 = 0;
#define INC64 INC8(a) INC8(b) INC8(c) INC8(d) INC8(e) INC8(f) INC8(g) INC8(h)

static int sink;

static void empty_region(void *ctx, int iters) {
  (void)ctx;
  for (int i = 0; i < iters; i++) {
#pragma omp target
    {}
  }
}

static void scalars_1(void *ctx, int iters) {
  (void)ctx;
  int a0 = 0;
  for (int i = 0; i < iters; i++) {
#pragma omp target map(tofrom: a0)
    a0++;
  }
  sink += a0;
}

static void scalars_8(void *ctx, int iters) {
  (void)ctx;
  int C8(a);
  Z8(a)
  for (int i = 0; i < iters; i++) {
#pragma omp target map(tofrom: C8(a))
    { INC8(a) }
  }
  sink += a0 + a7;
}

static void scalars_64(void *ctx, int iters) {
  (void)ctx;
  int C64;
  Z8(a) Z8(b) Z8(c) Z8(d) Z8(e) Z8(f) Z8(g) Z8(h)
  for (int i = 0; i < iters; i++) {
#pragma omp target map(tofrom: C64)
    { INC64 }
  }
  sink += a0 + h7;
}

static void present_8(void *ctx, int iters) {
  (void)ctx;
  int C8(a);
  Z8(a)
#pragma omp target data map(tofrom: C8(a))
  for (int i = 0; i < iters; i++) {
#pragma omp target map(tofrom: C8(a))
    { INC8(a) }
  }
  sink += a0 + a7;
}

int main(int argc, char **argv) {
  bench_init(argc, argv);
  int iters = bench_pick(4000, 500);
  int batches = bench_pick(15, 5);
  struct {
    const char *name;
    void (*body)(void *, int);
    int iters;
  } rows[] = {
      {"empty_region", empty_region, iters},
      {"scalars_1", scalars_1, iters},
      {"scalars_8", scalars_8, iters},
      {"scalars_64", scalars_64, iters / 4},
      {"present_8", present_8, iters},
  };
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    if (!bench_want(rows[r].name)) continue;
    double s = bench_per_iter(rows[r].body, NULL, rows[r].iters, batches);
    bench_result(rows[r].name, s * 1e9, "ns/region");
  }
  return sink == -1;
}
