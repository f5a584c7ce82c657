// C++: templated kernels on several types with functor arguments, lambdas inside target regions.
// (Lambdas passed from host code into a templated kernel are avoided: clang 22 does not emit
// those kernel instantiations into the device image.)
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

template <typename T, typename F>
static int apply(T *v, int n, F f) {
  int onhost = 1;
#pragma omp target teams distribute parallel for map(tofrom: v[0:n]) map(tofrom: onhost)
  for (int i = 0; i < n; i++) {
    v[i] = f(v[i], i);
    if (i == 0) onhost = omp_is_initial_device();
  }
  return onhost;
}

template <typename T>
static T dev_sum(const T *v, int n) {
  T s = T(0);
#pragma omp target parallel for map(to: v[0:n]) reduction(+: s)
  for (int i = 0; i < n; i++) s += v[i];
  return s;
}

struct MulAdd { int k; int operator()(int x, int i) const { return x * k + i; } };
struct Times4 { double operator()(double x, int) const { return x * 4.0; } };

int main() {
  int iv[64];
  double dv[64];
  for (int i = 0; i < 64; i++) { iv[i] = i; dv[i] = i * 0.5; }
  int k = 3;
  if (apply(iv, 64, MulAdd{k})) FAIL("int kernel ran on host");
  if (apply(dv, 64, Times4{})) FAIL("double kernel ran on host");
  for (int i = 0; i < 64; i++) {
    if (iv[i] != 4 * i) FAIL("iv[%d]=%d", i, iv[i]);
    if (dv[i] != 2.0 * i) FAIL("dv[%d]=%g", i, dv[i]);
  }
  if (dev_sum(iv, 64) != 4 * 2016) FAIL("dev_sum<int>=%d", dev_sum(iv, 64));
  if (dev_sum(dv, 64) != 2.0 * 2016) FAIL("dev_sum<double>=%g", dev_sum(dv, 64));
  // lambda defined and called inside the region, capturing by reference
  int total = 0, onhost = 1;
#pragma omp target map(tofrom: total, onhost)
  {
    onhost = omp_is_initial_device();
    int acc = 0;
    auto add = [&acc](int x) { acc += x; };
    for (int i = 1; i <= 10; i++) add(i * i);
    total = acc;
  }
  if (onhost) FAIL("lambda region ran on host");
  if (total != 385) FAIL("lambda captured-by-reference total=%d", total);
  return 0;
}
