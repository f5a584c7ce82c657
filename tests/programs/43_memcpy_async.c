// omp_target_memcpy_async with and without depend objects, completed by taskwait.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 4096

int main(void) {
  int offdev = 0;
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  int *h = malloc(N * sizeof(int)), *r = malloc(N * sizeof(int));
  for (int i = 0; i < N; i++) { h[i] = i ^ 0x55; r[i] = 0; }
  int *d = omp_target_alloc(N * sizeof(int), dev), *d2 = omp_target_alloc(N * sizeof(int), dev);
  if (!d || !d2) FAIL("alloc failed");
  // no dependences
  if (omp_target_memcpy_async(d, h, N * sizeof(int), 0, 0, dev, host, 0, NULL)) FAIL("async h->d failed");
#pragma omp taskwait
  // chain: d -> d2 depends on a task that writes d; then d2 -> r depends on the copy.
  omp_depend_t dep_d, dep_d2;
  int kd = 0, kd2 = 0;
#pragma omp depobj(dep_d) depend(inout: kd)
#pragma omp depobj(dep_d2) depend(inout: kd2)
#pragma omp task depend(inout: kd)
  {
#pragma omp target is_device_ptr(d) map(tofrom: offdev)
    {
      offdev |= omp_is_initial_device();
      for (int i = 0; i < N; i++) d[i] += 1;
    }
    if (offdev) FAIL("target region ran on the host");
  }
  if (omp_target_memcpy_async(d2, d, N * sizeof(int), 0, 0, dev, dev, 1, &dep_d)) FAIL("async d->d failed");
  // the next copy must wait for the d->d copy: depend on kd (same object) by depobj
  if (omp_target_memcpy_async(r, d2, N * sizeof(int), 0, 0, host, dev, 1, &dep_d)) FAIL("async d->h failed");
#pragma omp taskwait
  for (int i = 0; i < N; i++)
    if (r[i] != (i ^ 0x55) + 1) FAIL("r[%d]=%d expected %d", i, r[i], (i ^ 0x55) + 1);
  // a host task that depends on the async copy via the same variable
  int ok = 0;
  if (omp_target_memcpy_async(r, h, 16 * sizeof(int), 0, 0, host, host, 1, &dep_d2)) FAIL("async h->h failed");
#pragma omp task depend(in: kd2) shared(ok)
  ok = (r[5] == (5 ^ 0x55));
#pragma omp taskwait
  if (!ok) FAIL("dependent task ran before async copy completed");
#pragma omp depobj(dep_d) destroy
#pragma omp depobj(dep_d2) destroy
  omp_target_free(d, dev);
  omp_target_free(d2, dev);
  free(h); free(r);
  return 0;
}
