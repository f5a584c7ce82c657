// Remote offload test (build-tools/src/test/remote.rs): the same kernels on a local device and
// a remote one give bit-identical results. Needs two devices: 0 local (the application's CPU
// device) and 1 remote (a rustomp-proxy rank's), as `cargo xtask test` starts it.
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

#define N (1 << 18)

static void work(int dev, double *out, int64_t *sum, int n) {
  int64_t s = 0;
#pragma omp target teams distribute parallel for device(dev) map(from: out[0:n]) \
    reduction(+: s)
  for (int i = 0; i < n; i++) {
    double x = (double)i / n;
    out[i] = sin(x) * exp(-x) + sqrt(x + 1.0) / (1.0 + x * x);
    s += (int64_t)i * i % 1000003;
  }
  *sum = s;
}

int main(void) {
  if (omp_get_num_devices() < 2)
    FAIL("needs 2 devices (local 0, remote 1), found %d", omp_get_num_devices());
  double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
  int64_t sa = -1, sb = -2;
  if (!a || !b) FAIL("out of memory");
  work(0, a, &sa, N);
  work(1, b, &sb, N);
  if (sa != sb) FAIL("integer reduction differs: local %lld, remote %lld", (long long)sa, (long long)sb);
  if (memcmp(a, b, N * sizeof *a) != 0) {
    for (int i = 0; i < N; i++)
      if (memcmp(&a[i], &b[i], sizeof a[i]) != 0)
        FAIL("element %d differs: local %a, remote %a", i, a[i], b[i]);
  }
  // Data that goes out to the remote device, is changed there and comes back.
  int *v = malloc(N * sizeof *v);
  for (int i = 0; i < N; i++) v[i] = i;
#pragma omp target data map(tofrom: v[0:N]) device(1)
  {
#pragma omp target teams distribute parallel for device(1)
    for (int i = 0; i < N; i++) v[i] = 3 * v[i] + 1;
#pragma omp target update from(v[0:N]) device(1)
    for (int i = 0; i < N; i++)
      if (v[i] != 3 * i + 1) FAIL("v[%d]=%d after update from the remote device", i, v[i]);
  }
  printf("same results on the local and the remote device (%d elements, sum %lld)\n", N, (long long)sa);
  free(a); free(b); free(v);
  return 0;
}
