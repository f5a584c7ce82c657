// HOST-ONLY: the fault comes from the CPU plugin's fault injection (RUSTOMP_HOST_FAULTS), which GPU plugins do not have
// ENV: OMP_TARGET_OFFLOAD=default
// ENV: RUSTOMP_HOST_FAULTS=alloc:3
// EXPECT-STDERR: device 0 (host plugin): injected fault: allocation #3 (4000 bytes) fails
// EXPECT-STDERR: omptarget error: Call to getTargetPointer returned null pointer (device failure or illegal mapping).
// LLVM-REF: fails (no fault injection there: RUSTOMP_HOST_FAULTS is the CPU plugin's of this runtime)
// EXPECT-STDERR: rustomp host plugin: device 0: 0 allocations (0 bytes) outstanding
// A device allocation fails in the middle of a 'target enter data' (the third of four items,
// one of which is mapped already): a device failure, not a broken map clause, so under the
// default policy the program goes on. The construct is undone: the two entries it created are
// gone (their memory freed), the entry that existed keeps its single reference, and a second
// attempt maps everything.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 1000

static int a[N], b[N], c[N], d[N];

int main(void) {
  int dev = omp_get_default_device();
  for (int i = 0; i < N; i++) { a[i] = i; b[i] = 2 * i; c[i] = 3 * i; d[i] = 4 * i; }
  #pragma omp target enter data map(to: b)
  #pragma omp target enter data map(to: a, b, c, d)
  if (omp_target_is_present(a, dev) || omp_target_is_present(c, dev) || omp_target_is_present(d, dev))
    FAIL("the failed construct left entries: a %d, c %d, d %d", omp_target_is_present(a, dev),
         omp_target_is_present(c, dev), omp_target_is_present(d, dev));
  if (!omp_target_is_present(b, dev)) FAIL("b, mapped before, is gone");
  // b still holds one reference: one exit removes it.
  #pragma omp target exit data map(release: b)
  if (omp_target_is_present(b, dev)) FAIL("b kept a reference of the failed construct");
  #pragma omp target enter data map(to: a, b, c, d)
  long sum = 0;
  #pragma omp target map(tofrom: sum)
  for (int i = 0; i < N; i++) sum += a[i] + b[i] + c[i] + d[i];
  if (sum != 10L * N * (N - 1) / 2) FAIL("sum %ld", sum);
  #pragma omp target exit data map(release: a, b, c, d)
  return 0;
}
