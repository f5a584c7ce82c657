// The GPU group, reductions (NVIDIA, compiled for sm_90), apart from gpu.c because they need
// the device runtime's reduction entry points (__kmpc_nvptx_teams_reduce_nowait_v2 and friends).
// Every row reads a 1 GiB array (omp_target_alloc, is_device_ptr) with
// `target teams distribute parallel for reduction(...)` and checks the result.
//
//   reduction           reduction(+: sum) over doubles: GB/s read
//   reduction_fraction  reduction / the cuMemcpyDtoD bandwidth of 1 GiB measured in this run
//                       (read + write counted, as gpu.c's d2d_copy)
//   reduction_int, reduction_long, reduction_float
//                       reduction(+: sum) over ints, longs, floats: GB/s (and _fraction)
//   reduction_min       reduction(min: low) over doubles: GB/s (and _fraction)
//   reduction_two       reduction(+: sum) reduction(max: high) over doubles, two variables at
//                       once: GB/s (and _fraction)
//   reduction_t256, reduction_t1024
//                       reduction(+: sum) over doubles in teams of 256 (AMD's default) and
//                       1024 threads (thread_limit); the plain row is clang's default, 128 on
//                       NVIDIA: GB/s (and _fraction)
#include "bench.h"
#include "cuda_raw.h"
#include <math.h>
#include <omp.h>

#define REDUCE_BYTES ((size_t)1 << 30)  // 1 GiB

/// One timed reduction over the buffer: returns its result (the second variable, if any, in
/// `*other`).
typedef double (*reduce_fn)(void *buf, double *other);

static double sum_double(void *buf, double *other) {
  (void)other;
  const double *x = buf;
  size_t n = REDUCE_BYTES / sizeof(double);
  double sum = 0.0;
#pragma omp target teams distribute parallel for reduction(+: sum) is_device_ptr(x) map(tofrom: sum)
  for (size_t i = 0; i < n; i++) sum += x[i];
  return sum;
}

static double sum_double_256(void *buf, double *other) {
  (void)other;
  const double *x = buf;
  size_t n = REDUCE_BYTES / sizeof(double);
  double sum = 0.0;
#pragma omp target teams distribute parallel for reduction(+: sum) thread_limit(256) is_device_ptr(x) map(tofrom: sum)
  for (size_t i = 0; i < n; i++) sum += x[i];
  return sum;
}

static double sum_double_1024(void *buf, double *other) {
  (void)other;
  const double *x = buf;
  size_t n = REDUCE_BYTES / sizeof(double);
  double sum = 0.0;
#pragma omp target teams distribute parallel for reduction(+: sum) thread_limit(1024) is_device_ptr(x) map(tofrom: sum)
  for (size_t i = 0; i < n; i++) sum += x[i];
  return sum;
}

static double sum_int(void *buf, double *other) {
  (void)other;
  const int *x = buf;
  size_t n = REDUCE_BYTES / sizeof(int);
  int sum = 0;
#pragma omp target teams distribute parallel for reduction(+: sum) is_device_ptr(x) map(tofrom: sum)
  for (size_t i = 0; i < n; i++) sum += x[i];
  return sum;
}

static double sum_long(void *buf, double *other) {
  (void)other;
  const long *x = buf;
  size_t n = REDUCE_BYTES / sizeof(long);
  long sum = 0;
#pragma omp target teams distribute parallel for reduction(+: sum) is_device_ptr(x) map(tofrom: sum)
  for (size_t i = 0; i < n; i++) sum += x[i];
  return (double)sum;
}

static double sum_float(void *buf, double *other) {
  (void)other;
  const float *x = buf;
  size_t n = REDUCE_BYTES / sizeof(float);
  float sum = 0.0f;
#pragma omp target teams distribute parallel for reduction(+: sum) is_device_ptr(x) map(tofrom: sum)
  for (size_t i = 0; i < n; i++) sum += x[i];
  return sum;
}

static double min_double(void *buf, double *other) {
  (void)other;
  const double *x = buf;
  size_t n = REDUCE_BYTES / sizeof(double);
  double low = INFINITY;
#pragma omp target teams distribute parallel for reduction(min: low) is_device_ptr(x) map(tofrom: low)
  for (size_t i = 0; i < n; i++) low = x[i] < low ? x[i] : low;
  return low;
}

static double sum_and_max_double(void *buf, double *other) {
  const double *x = buf;
  size_t n = REDUCE_BYTES / sizeof(double);
  double sum = 0.0, high = -INFINITY;
#pragma omp target teams distribute parallel for reduction(+: sum) reduction(max: high) is_device_ptr(x) map(tofrom: sum, high)
  for (size_t i = 0; i < n; i++) {
    sum += x[i];
    high = x[i] > high ? x[i] : high;
  }
  *other = high;
  return sum;
}

/// Fills the buffer with `fill` of the element type (`size` bytes: 4 int/float, 8 long/double,
/// `is_float` for the floating types), then puts `odd` at element `odd_at`.
static void fill(void *buf, int size, int is_float, double value, size_t odd_at, double odd) {
  size_t n = REDUCE_BYTES / (size_t)size;
  if (size == 4 && !is_float) {
    int *x = buf, v = (int)value, o = (int)odd;
#pragma omp target teams distribute parallel for is_device_ptr(x)
    for (size_t i = 0; i < n; i++) x[i] = i == odd_at ? o : v;
  } else if (size == 4) {
    float *x = buf, v = (float)value, o = (float)odd;
#pragma omp target teams distribute parallel for is_device_ptr(x)
    for (size_t i = 0; i < n; i++) x[i] = i == odd_at ? o : v;
  } else if (!is_float) {
    long *x = buf, v = (long)value, o = (long)odd;
#pragma omp target teams distribute parallel for is_device_ptr(x)
    for (size_t i = 0; i < n; i++) x[i] = i == odd_at ? o : v;
  } else {
    double *x = buf, v = value, o = odd;
#pragma omp target teams distribute parallel for is_device_ptr(x)
    for (size_t i = 0; i < n; i++) x[i] = i == odd_at ? o : v;
  }
}

/// Times `reps` runs of `reduce` after a warm-up, checking every result against `want` (within
/// `tolerance` relative) and the second variable against `want_other` (NAN: none); prints the
/// median GB/s as `name` and its fraction of `copy` as `name`_fraction.
static void row(const char *name, reduce_fn reduce, void *buf, int reps, double copy, double want,
                double tolerance, double want_other) {
  double rate[BENCH_MAX_BATCHES];
  for (int r = -1; r < reps; r++) {
    double other = NAN, t0 = bench_now();
    double got = reduce(buf, &other);
    double seconds = bench_now() - t0;
    if (r >= 0) rate[r] = (double)REDUCE_BYTES / seconds * 1e-9;
    if (fabs(got - want) > tolerance * fabs(want))
      BENCH_FAIL("gpu_reduce: %s computed %.17g, expected %.17g", name, got, want);
    if (!isnan(want_other) && other != want_other)
      BENCH_FAIL("gpu_reduce: %s computed %.17g for its second variable, expected %.17g", name,
                 other, want_other);
  }
  double gbps = bench_median(rate, reps);
  char fraction[64];
  snprintf(fraction, sizeof fraction, "%s_fraction", name);
  bench_result(name, gbps, "GB/s");
  bench_result(fraction, gbps / copy, "of_copy");
}

int main(int argc, char **argv) {
  bench_init(argc, argv);
  int reps = bench_pick(11, 3);
  int dev = omp_get_default_device();
  gpu_bench_require_device("gpu_reduce");
  double copy = raw_d2d_gbps(REDUCE_BYTES, reps);

  void *buf = omp_target_alloc(REDUCE_BYTES, dev);
  if (!buf) BENCH_FAIL("gpu_reduce: omp_target_alloc of 1 GiB failed");
  size_t doubles = REDUCE_BYTES / sizeof(double), words = REDUCE_BYTES / sizeof(int);

  if (bench_want("reduction")) {
    // The existing rows first (their names are prefixes of the others').
    fill(buf, 8, 1, 1.0, 0, 1.0);
    row("reduction", sum_double, buf, reps, copy, (double)doubles, 0.0, NAN);
  }
  if (bench_want("reduction_int")) {
    fill(buf, 4, 0, 1.0, 0, 1.0);
    row("reduction_int", sum_int, buf, reps, copy, (double)words, 0.0, NAN);
  }
  if (bench_want("reduction_long")) {
    fill(buf, 8, 0, 1.0, doubles / 3, 5.0);
    row("reduction_long", sum_long, buf, reps, copy, (double)doubles + 4.0, 0.0, NAN);
  }
  if (bench_want("reduction_float")) {
    // 2^28 ones: partial sums past 2^24 round in single precision, in any order.
    fill(buf, 4, 1, 1.0, 0, 1.0);
    row("reduction_float", sum_float, buf, reps, copy, (double)words, 1e-5, NAN);
  }
  if (bench_want("reduction_min")) {
    fill(buf, 8, 1, 3.0, doubles - 7, -2.5);
    row("reduction_min", min_double, buf, reps, copy, -2.5, 0.0, NAN);
  }
  if (bench_want("reduction_two")) {
    fill(buf, 8, 1, 1.0, doubles / 2, 7.0);
    row("reduction_two", sum_and_max_double, buf, reps, copy, (double)doubles + 6.0, 0.0, 7.0);
  }
  if (bench_want("reduction_t256")) {
    fill(buf, 8, 1, 1.0, 0, 1.0);
    row("reduction_t256", sum_double_256, buf, reps, copy, (double)doubles, 0.0, NAN);
  }
  if (bench_want("reduction_t1024")) {
    fill(buf, 8, 1, 1.0, 0, 1.0);
    row("reduction_t1024", sum_double_1024, buf, reps, copy, (double)doubles, 0.0, NAN);
  }
  omp_target_free(buf, dev);
  return 0;
}
