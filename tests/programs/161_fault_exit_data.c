// HOST-ONLY: the fault comes from the CPU plugin's fault injection (RUSTOMP_HOST_FAULTS), which GPU plugins do not have
// ENV: OMP_TARGET_OFFLOAD=default
// ENV: RUSTOMP_HOST_FAULTS=from:1
// EXPECT-STDERR: device 0 (host plugin): injected fault: device-to-host copy #1 (4000 bytes from
// LLVM-REF: fails (no fault injection there: RUSTOMP_HOST_FAULTS is the CPU plugin's of this runtime)
// EXPECT-STDERR: rustomp host plugin: device 0: 0 allocations (0 bytes) outstanding
// A 'target exit data map(from: ...)' whose copy back fails: reported; the entry lost its last
// reference, so it is removed and its memory freed anyway (the data cannot come back; keeping the
// entry would leak it and leave a mapping nobody references).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 1000

static int a[N];

int main(void) {
  int dev = omp_get_default_device();
  for (int i = 0; i < N; i++) a[i] = i;
  #pragma omp target enter data map(to: a)
  #pragma omp target
  for (int i = 0; i < N; i++) a[i] += 10;
  #pragma omp target exit data map(from: a)
  if (omp_target_is_present(a, dev)) FAIL("a still mapped after the failed exit");
  for (int i = 0; i < N; i++) if (a[i] != i) FAIL("a[%d] = %d: the failed copy changed the host's data", i, a[i]);
  return 0;
}
