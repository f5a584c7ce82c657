// HOST-ONLY: the fault comes from the CPU plugin's fault injection (RUSTOMP_HOST_FAULTS), which GPU plugins do not have
// ENV: OMP_TARGET_OFFLOAD=default
// ENV: RUSTOMP_HOST_FAULTS=to:2
// EXPECT-STDERR: device 0 (host plugin): injected fault: host-to-device copy #2 (4000 bytes to
// EXPECT-STDERR: omptarget error: Failed to process data before launching the kernel.
// EXPECT-STDERR: rustomp host plugin: device 0: 0 allocations (0 bytes) outstanding
// A copy to the device fails half-way through a target region's maps (the second of three
// items): the failure is reported, the construct is undone (no entry of it stays, no device
// memory leaks), the region runs on the host (default policy), and the next region maps and
// runs on the device as if nothing happened.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 1000

static int a[N], b[N], c[N];

int main(void) {
  int dev = omp_get_default_device();
  for (int i = 0; i < N; i++) { a[i] = i; b[i] = 2 * i; c[i] = -1; }
  #pragma omp target map(to: a, b) map(from: c)
  for (int i = 0; i < N; i++) c[i] = a[i] + b[i];
  for (int i = 0; i < N; i++) if (c[i] != 3 * i) FAIL("c[%d] = %d after the failed region", i, c[i]);
  if (omp_target_is_present(a, dev) || omp_target_is_present(b, dev) || omp_target_is_present(c, dev))
    FAIL("the failed region left entries: a %d, b %d, c %d", omp_target_is_present(a, dev),
         omp_target_is_present(b, dev), omp_target_is_present(c, dev));
  int on_device = 0;
  #pragma omp target map(to: a, b) map(from: c, on_device)
  {
    on_device = !omp_is_initial_device();
    for (int i = 0; i < N; i++) c[i] = b[i] - a[i];
  }
  if (!on_device) FAIL("the next region did not run on the device");
  for (int i = 0; i < N; i++) if (c[i] != i) FAIL("c[%d] = %d after the next region", i, c[i]);
  return 0;
}
