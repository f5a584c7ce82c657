// omp_target_alloc of an absurd size must return NULL (not crash); success = got NULL.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int dev = omp_get_default_device();
  void *p = omp_target_alloc((size_t)1 << 62, dev);
  if (p != NULL) FAIL("omp_target_alloc(1<<62) returned non-NULL %p", p);
  // a zero-size allocation returns NULL per the spec
  void *z = omp_target_alloc(0, dev);
  if (z != NULL) FAIL("omp_target_alloc(0) returned non-NULL %p", z);
  // the runtime still works afterwards
  void *q = omp_target_alloc(1024, dev);
  if (!q) FAIL("omp_target_alloc(1024) failed after a failed huge allocation");
  int v = 0;
#pragma omp target is_device_ptr(q) map(from: v)
  {
    ((int *)q)[0] = 5;
    v = ((int *)q)[0] + omp_is_initial_device();
  }
  if (v != 5) FAIL("device use after failed allocation: v=%d", v);
  omp_target_free(q, dev);
  return 0;
}
