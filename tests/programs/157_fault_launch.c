// HOST-ONLY: the fault comes from the CPU plugin's fault injection (RUSTOMP_HOST_FAULTS), which GPU plugins do not have
// ENV: OMP_TARGET_OFFLOAD=default
// ENV: RUSTOMP_HOST_FAULTS=launch:1
// EXPECT-STDERR: device 0 (host plugin): injected fault: kernel launch #1
// EXPECT-STDERR: omptarget error: Executing target region abort target.
// EXPECT-STDERR: rustomp host plugin: device 0: 0 allocations (0 bytes) outstanding
// The kernel launch fails after the maps are in place: the construct's references go without
// copying anything back (the device copy of a 'from' item holds no result), so the host version
// of the region computes on the host's data, and no entry or device memory is left.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 1000

static int in[N], out[N];

int main(void) {
  int dev = omp_get_default_device();
  for (int i = 0; i < N; i++) { in[i] = i; out[i] = 7; }
  int scale = 3;
  #pragma omp target map(to: in) map(tofrom: out) firstprivate(scale)
  for (int i = 0; i < N; i++) out[i] += scale * in[i];
  for (int i = 0; i < N; i++) if (out[i] != 7 + 3 * i) FAIL("out[%d] = %d (copied back from the device, or run twice)", i, out[i]);
  if (omp_target_is_present(in, dev) || omp_target_is_present(out, dev)) FAIL("the failed launch left entries");
  int on_device = 0;
  #pragma omp target map(from: on_device)
  on_device = !omp_is_initial_device();
  if (!on_device) FAIL("the next region did not run on the device");
  return 0;
}
