// Zero-length array sections: no mapping created, but pointers attach to existing mappings.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 32

int main(void) {
  int offdev = 0;
  int dev = omp_get_default_device();
  int *p = malloc(N * sizeof(int));
  for (int i = 0; i < N; i++) p[i] = i;
  // zero-length map of unmapped storage creates nothing
#pragma omp target enter data map(to: p[0:0])
  if (omp_target_is_present(p, dev)) FAIL("map(p[0:0]) created a mapping");
#pragma omp target exit data map(release: p[0:0])
  // map the storage, then use a zero-length section to get the translated pointer
#pragma omp target enter data map(to: p[0:N])
  long devaddr = 0;
  int v = -1;
#pragma omp target map(tofrom: p[0:0]) map(from: devaddr, v) map(tofrom: offdev)
  {
    offdev |= omp_is_initial_device();
    devaddr = (long)p;
    v = p[7];
    p[7] = 700;
  }
  if (offdev) FAIL("target region ran on the host");
  if (devaddr == (long)p) FAIL("zero-length section did not translate p to the device copy");
  if ((void *)devaddr != omp_get_mapped_ptr(p, dev)) FAIL("translated p != omp_get_mapped_ptr(p)");
  if (v != 7) FAIL("p[7] through zero-length section: %d", v);
  if (p[7] != 7) FAIL("zero-length section copied data back");
  // zero-length section of an interior element
  int w = -1;
#pragma omp target map(p[10:0]) map(from: w)
  w = p[10];
  if (w != 10) FAIL("interior zero-length section: %d", w);
#pragma omp target exit data map(from: p[0:N])
  if (p[7] != 700) FAIL("p[7]=%d after exit data", p[7]);
  if (omp_target_is_present(p, dev)) FAIL("still present");
  free(p);
  return 0;
}
