// target enter data / exit data / update with nowait and depend, and taskwait.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 1000
#define K 8

int main(void) {
  int offdev = 0;
  int dev = omp_get_default_device();
  double *arr[K];
  for (int k = 0; k < K; k++) {
    arr[k] = malloc(N * sizeof(double));
    for (int i = 0; i < N; i++) arr[k][i] = k * 1000 + i;
  }
  for (int k = 0; k < K; k++) {
    double *p = arr[k];
#pragma omp target enter data map(to: p[0:N]) nowait depend(out: p[0])
  }
  for (int k = 0; k < K; k++) {
    double *p = arr[k];
#pragma omp target teams distribute parallel for nowait depend(inout: p[0]) map(tofrom: offdev)
    for (int i = 0; i < N; i++) { p[i] = -p[i]; if (omp_is_initial_device()) offdev = 1; }
  }
#pragma omp taskwait
  if (offdev) FAIL("target region ran on the host");
  for (int k = 0; k < K; k++) {
    if (!omp_target_is_present(arr[k], dev)) FAIL("arr[%d] not present after nowait enter data", k);
    if (arr[k][1] != k * 1000 + 1) FAIL("host arr[%d] modified before exit data", k);
  }
  for (int k = 0; k < K; k++) {
    double *p = arr[k];
#pragma omp target update from(p[0:N/2]) nowait depend(inout: p[0])
#pragma omp target exit data map(delete: p[0:N]) nowait depend(inout: p[0])
  }
#pragma omp taskwait
  for (int k = 0; k < K; k++) {
    if (omp_target_is_present(arr[k], dev)) FAIL("arr[%d] still present after nowait exit data", k);
    for (int i = 0; i < N; i++) {
      double want = i < N / 2 ? -(k * 1000.0 + i) : k * 1000.0 + i;
      if (arr[k][i] != want) FAIL("arr[%d][%d]=%g expected %g", k, i, arr[k][i], want);
    }
    free(arr[k]);
  }
  // exit data map(from:) nowait
  int v[4] = {1, 2, 3, 4};
#pragma omp target enter data map(to: v) nowait depend(out: v)
#pragma omp target nowait depend(inout: v)
  for (int i = 0; i < 4; i++) v[i] *= 10;
#pragma omp target exit data map(from: v) nowait depend(inout: v)
#pragma omp taskwait
  if (v[0] != 10 || v[3] != 40) FAIL("exit data from nowait: v = %d..%d", v[0], v[3]);
  return 0;
}
