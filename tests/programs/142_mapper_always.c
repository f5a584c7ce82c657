// The 'always' modifier of a map clause whose list item goes through a user-defined mapper
// applies to the components the mapper maps: with s already mapped, enter data
// map(always, to: s) copies the members to the device again, and a target construct with
// map(always, from: s) copies them back at its end although s stays mapped (enter data holds
// a reference). The device copy is read with omp_target_memcpy, which maps nothing.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 8

struct S { int n; int a[N]; };
#pragma omp declare mapper(struct S s) map(s.n, s.a[0:s.n])

static void read_device(struct S *s, int dev, int *out) {
  void *d = omp_get_mapped_ptr(s->a, dev);
  if (!d) FAIL("s.a not mapped");
  if (omp_target_memcpy(out, d, N * sizeof(int), 0, 0, omp_get_initial_device(), dev))
    FAIL("omp_target_memcpy failed");
}

int main(void) {
  int dev = omp_get_default_device();
  if (omp_get_num_devices() < 1) FAIL("no device");
  struct S s;
  int out[N], init = -1;
  s.n = N;
  for (int i = 0; i < N; i++) s.a[i] = i;

#pragma omp target enter data map(to: s)
  if (!omp_target_is_present(&s, dev)) FAIL("enter data through the mapper did not map s");
  read_device(&s, dev, out);
  for (int i = 0; i < N; i++)
    if (out[i] != i) FAIL("after enter data: device s.a[%d]=%d, expected %d", i, out[i], i);

  // s is mapped: 'always' forces the members across again
  for (int i = 0; i < N; i++) s.a[i] = 100 + i;
#pragma omp target enter data map(always, to: s)
  read_device(&s, dev, out);
  for (int i = 0; i < N; i++)
    if (out[i] != 100 + i) FAIL("enter data map(always, to: s): device s.a[%d]=%d, expected %d", i, out[i], 100 + i);

  // 'always' with 'from': copied back at the end of the region, s stays mapped
  for (int i = 0; i < N; i++) s.a[i] = -1;
#pragma omp target map(always, from: s) map(from: init)
  {
    init = omp_is_initial_device();
    for (int i = 0; i < s.n; i++) s.a[i] = 300 + i;
  }
  if (init != 0) FAIL("region ran on the host");
  for (int i = 0; i < N; i++)
    if (s.a[i] != 300 + i) FAIL("map(always, from: s): host s.a[%d]=%d, expected %d", i, s.a[i], 300 + i);
  if (s.n != N) FAIL("s.n=%d", s.n);
  if (!omp_target_is_present(&s, dev)) FAIL("s unmapped by the region although enter data holds it");

#pragma omp target exit data map(delete: s)
  return 0;
}
