// HOST-ONLY: the fault comes from the CPU plugin's fault injection (RUSTOMP_HOST_FAULTS), which GPU plugins do not have
// ENV: OMP_TARGET_OFFLOAD=default
// ENV: RUSTOMP_HOST_FAULTS=from:1
// EXPECT-STDERR: device 0 (host plugin): injected fault: device-to-host copy #1 (4000 bytes from
// EXPECT-STDERR: omptarget error: Failed to process data after launching the kernel.
// EXPECT-STDERR: rustomp host plugin: device 0: 0 allocations (0 bytes) outstanding
// The copy back of a target region's result fails: reported, and the entries whose last reference
// went are removed and freed all the same (nothing leaks, nothing stays mapped). The region then
// counts as failed, so the default policy runs its host version, which computes the result.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 1000

static int x[N], y[N];

int main(void) {
  int dev = omp_get_default_device();
  for (int i = 0; i < N; i++) { x[i] = i; y[i] = 0; }
  #pragma omp target map(tofrom: x) map(to: y)
  for (int i = 0; i < N; i++) x[i] += 1 + y[i];
  for (int i = 0; i < N; i++) if (x[i] != i + 1) FAIL("x[%d] = %d", i, x[i]);
  if (omp_target_is_present(x, dev) || omp_target_is_present(y, dev)) FAIL("entries left after the failed copy back");
  return 0;
}
