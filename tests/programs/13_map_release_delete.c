// target exit data map(release:) decrements the reference count; map(delete:) removes regardless.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int offdev = 0;
  int dev = omp_get_default_device();
  int a[32];
  for (int i = 0; i < 32; i++) a[i] = i;
#pragma omp target enter data map(to: a)
#pragma omp target enter data map(to: a) // refcount 2, no new copy
#pragma omp target enter data map(to: a) // refcount 3
#pragma omp target map(tofrom: offdev)
  {
    offdev |= omp_is_initial_device();
    for (int i = 0; i < 32; i++) a[i] += 1000; // a is present: device copy only
  }
  if (offdev) FAIL("target region ran on the host");
#pragma omp target exit data map(release: a)
  if (!omp_target_is_present(a, dev)) FAIL("a removed after first release (refcount was 3)");
#pragma omp target exit data map(from: a) // refcount 2->1: no copy back yet
  if (!omp_target_is_present(a, dev)) FAIL("a removed after second exit (refcount was 2)");
  for (int i = 0; i < 32; i++)
    if (a[i] != i) FAIL("map(from:) on exit copied back before refcount reached 0: a[%d]=%d", i, a[i]);
#pragma omp target exit data map(from: a) // refcount 1->0: copy back
  if (omp_target_is_present(a, dev)) FAIL("a still present after refcount reached 0");
  for (int i = 0; i < 32; i++)
    if (a[i] != i + 1000) FAIL("final exit map(from:) did not copy back: a[%d]=%d", i, a[i]);

  // delete: removes immediately regardless of the count, without copying back.
  int b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
#pragma omp target enter data map(to: b)
#pragma omp target enter data map(to: b)
#pragma omp target enter data map(to: b)
#pragma omp target
  b[0] = 500;
#pragma omp target exit data map(delete: b)
  if (omp_target_is_present(b, dev)) FAIL("b present after map(delete:) with refcount 3");
  if (b[0] != 1) FAIL("map(delete:) copied data back: b[0]=%d", b[0]);
  // After delete, a new mapping copies fresh host data.
  b[1] = 42;
  int got = -1;
#pragma omp target map(to: b) map(from: got)
  got = b[0] * 1000 + b[1];
  if (got != 1042) FAIL("re-mapping after delete saw stale data: %d", got);
  return 0;
}
