// Unmapping what is no longer mapped is not an error (OpenMP 5.2 map clause: a list item
// absent on exit is ignored): `exit data map(delete:)` twice, `release` of unmapped data,
// and `delete` while a structured region still holds the data.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 32

int main(void) {
  int dev = omp_get_default_device();
  int a[N], b[N];
  for (int i = 0; i < N; i++) { a[i] = i; b[i] = -i; }
#pragma omp target enter data map(to: a)
#pragma omp target enter data map(to: a) // second reference
#pragma omp target exit data map(delete: a) // drops every dynamic reference
  if (omp_target_is_present(a, dev)) FAIL("a present after delete");
#pragma omp target exit data map(delete: a) // already gone: ignored
#pragma omp target exit data map(release: b) // never mapped: ignored
#pragma omp target exit data map(from: a[0:N]) // not mapped: nothing copied
  for (int i = 0; i < N; i++)
    if (a[i] != i || b[i] != -i) FAIL("host data changed: a[%d]=%d b[%d]=%d", i, a[i], i, b[i]);
  // delete inside a structured region: the hold reference keeps the data (ompx_hold)
#pragma omp target data map(ompx_hold, tofrom: b)
  {
#pragma omp target exit data map(delete: b)
    if (!omp_target_is_present(b, dev)) FAIL("delete removed data held by ompx_hold");
#pragma omp target
    for (int i = 0; i < N; i++) b[i] = 2 * i;
  }
  if (omp_target_is_present(b, dev)) FAIL("b still present after its region");
  for (int i = 0; i < N; i++)
    if (b[i] != 2 * i) FAIL("b[%d]=%d expected %d", i, b[i], 2 * i);
  // the runtime still maps and copies normally afterwards
#pragma omp target map(tofrom: a)
  for (int i = 0; i < N; i++) a[i] += 100;
  for (int i = 0; i < N; i++)
    if (a[i] != 100 + i) FAIL("a[%d]=%d expected %d", i, a[i], 100 + i);
  return 0;
}
