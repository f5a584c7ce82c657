// declare mapper for a struct with a dynamic array.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

typedef struct { int n; double *data; } DVec;
#pragma omp declare mapper(DVec v) map(v, v.data[0:v.n])

typedef struct { int n; int *idx; } IVec;
#pragma omp declare mapper(half : IVec v) map(v, v.idx[0:v.n / 2])

int main(void) {
  DVec v;
  v.n = 1000;
  v.data = malloc(v.n * sizeof(double));
  double *orig = v.data;
  for (int i = 0; i < v.n; i++) v.data[i] = i;
  int init = -1;
#pragma omp target map(tofrom: v) map(from: init) // default mapper maps v.data[0:n]
  {
    init = omp_is_initial_device();
    for (int i = 0; i < v.n; i++) v.data[i] = v.data[i] * 2 + 1;
  }
  if (init != 0) FAIL("region ran on host");
  if (v.data != orig) FAIL("host v.data pointer overwritten");
  for (int i = 0; i < v.n; i++)
    if (v.data[i] != 2.0 * i + 1) FAIL("v.data[%d]=%g", i, v.data[i]);
  // mapper with enter/exit data and update
#pragma omp target enter data map(to: v)
  if (!omp_target_is_present(&v.data[v.n - 1], omp_get_default_device())) FAIL("mapper did not map v.data");
#pragma omp target
  for (int i = 0; i < v.n; i++) v.data[i] = -v.data[i];
  if (v.data[1] != 3.0) FAIL("host data changed while mapped");
#pragma omp target update from(v)
  if (v.data[1] != -3.0) FAIL("target update from(v) via mapper: v.data[1]=%g", v.data[1]);
#pragma omp target exit data map(delete: v)
  if (omp_target_is_present(v.data, omp_get_default_device())) FAIL("v.data still present after delete");
  // named mapper, mapping only half of the array
  IVec w; w.n = 10; w.idx = malloc(10 * sizeof(int));
  for (int i = 0; i < 10; i++) w.idx[i] = i;
#pragma omp target map(mapper(half), tofrom: w)
  for (int i = 0; i < w.n / 2; i++) w.idx[i] += 100;
  for (int i = 0; i < 10; i++)
    if (w.idx[i] != (i < 5 ? i + 100 : i)) FAIL("named mapper: w.idx[%d]=%d", i, w.idx[i]);
  free(v.data); free(w.idx);
  return 0;
}
