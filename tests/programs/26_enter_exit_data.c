// target enter data / target exit data: unstructured mapping lifetimes.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 500

static double *make(int n) {
  double *p = malloc(n * sizeof(double));
#pragma omp target enter data map(alloc: p[0:n])
  return p;
}
static void destroy(double *p, int n) {
#pragma omp target exit data map(from: p[0:n])
}

int main(void) {
  int dev = omp_get_default_device();
  double *x = make(N);
  if (!omp_target_is_present(x, dev)) FAIL("enter data in helper did not map x");
  int init = -1;
#pragma omp target teams distribute parallel for map(from: init)
  for (int i = 0; i < N; i++) {
    x[i] = i * 0.25;
    if (i == 0) init = omp_is_initial_device();
  }
  if (init != 0) FAIL("region ran on host");
#pragma omp target
  for (int i = 0; i < N; i++) x[i] += 1.0;
  destroy(x, N);
  if (omp_target_is_present(x, dev)) FAIL("x still present after exit data");
  for (int i = 0; i < N; i++)
    if (x[i] != i * 0.25 + 1.0) FAIL("x[%d]=%g expected %g", i, x[i], i * 0.25 + 1.0);
  // Several variables in one directive, mixed map types
  int u = 1, v = 2, w[3] = {1, 2, 3};
#pragma omp target enter data map(to: u, w) map(alloc: v)
#pragma omp target map(tofrom: u, v, w)
  { v = u + w[2]; u = 50; w[0] = 60; }
  if (u != 1 || v != 2 || w[0] != 1) FAIL("present data copied back at region end");
#pragma omp target exit data map(from: v) map(release: u) map(delete: w)
  if (v != 4) FAIL("v=%d expected 4", v);
  if (u != 1 || w[0] != 1) FAIL("release/delete copied back");
  if (omp_target_is_present(&u, dev) || omp_target_is_present(&v, dev) || omp_target_is_present(w, dev))
    FAIL("variables still present after exit data");
  // map(always, from:) on exit data while refcount stays > 0
  int z = 0;
#pragma omp target enter data map(to: z)
#pragma omp target enter data map(to: z)
#pragma omp target map(tofrom: z)
  z = 77;
#pragma omp target exit data map(always, from: z)
  if (z != 77) FAIL("exit data map(always,from:) z=%d", z);
  if (!omp_target_is_present(&z, dev)) FAIL("z removed with refcount 1 left");
  z = 1;
#pragma omp target exit data map(from: z)
  if (z != 77) FAIL("final exit data map(from:) z=%d", z);
  // enter data if(false) does nothing
  int q = 3, cond = 0;
#pragma omp target enter data map(to: q) if(cond)
  if (omp_target_is_present(&q, dev)) FAIL("enter data if(0) mapped q");
  free(x);
  return 0;
}
