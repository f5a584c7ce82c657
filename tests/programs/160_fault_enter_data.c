// HOST-ONLY: the fault comes from the CPU plugin's fault injection (RUSTOMP_HOST_FAULTS), which GPU plugins do not have
// ENV: OMP_TARGET_OFFLOAD=default
// ENV: RUSTOMP_HOST_FAULTS=to:2
// EXPECT-STDERR: device 0 (host plugin): injected fault: host-to-device copy #2 (4000 bytes to
// LLVM-REF: fails (no fault injection there: RUSTOMP_HOST_FAULTS is the CPU plugin's of this runtime)
// EXPECT-STDERR: rustomp host plugin: device 0: 0 allocations (0 bytes) outstanding
// A 'target enter data' whose second copy fails is undone as a whole: neither item is mapped
// afterwards, so a later construct does not find an entry whose data never arrived; mapping
// them again works and gives the device the host's data.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 1000

static int a[N], b[N];

int main(void) {
  int dev = omp_get_default_device();
  for (int i = 0; i < N; i++) { a[i] = i; b[i] = 5 * i; }
  #pragma omp target enter data map(to: a, b)
  if (omp_target_is_present(a, dev) || omp_target_is_present(b, dev))
    FAIL("the failed enter left entries: a %d, b %d", omp_target_is_present(a, dev), omp_target_is_present(b, dev));
  #pragma omp target enter data map(to: a, b)
  long sum = 0;
  #pragma omp target map(tofrom: sum)
  for (int i = 0; i < N; i++) sum += a[i] + b[i];
  if (sum != 6L * N * (N - 1) / 2) FAIL("sum %ld", sum);
  #pragma omp target exit data map(delete: a, b)
  if (omp_target_is_present(a, dev) || omp_target_is_present(b, dev)) FAIL("entries left");
  return 0;
}
