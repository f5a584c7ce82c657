// map(tofrom:) (explicit and default for arrays): copy in and copy out.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 1000

int main(void) {
  long *p = malloc(N * sizeof(long));
  double d = 1.5;
  int init = -1;
  for (int i = 0; i < N; i++) p[i] = i;
  for (int rep = 0; rep < 3; rep++) {
#pragma omp target map(tofrom: p[0:N], d, init)
    {
      init = omp_is_initial_device();
      for (int i = 0; i < N; i++) p[i] = p[i] * 2 + 1;
      d *= 2.0;
    }
    if (init != 0) FAIL("region ran on host");
  }
  for (int i = 0; i < N; i++) {
    long want = ((i * 2 + 1) * 2 + 1) * 2 + 1;
    if (p[i] != want) FAIL("p[%d]=%ld, expected %ld", i, p[i], want);
  }
  if (d != 12.0) FAIL("d=%g expected 12", d);
  // default map type for a referenced array is tofrom
  int arr[10];
  for (int i = 0; i < 10; i++) arr[i] = i;
#pragma omp target
  for (int i = 0; i < 10; i++) arr[i] += 100;
  for (int i = 0; i < 10; i++)
    if (arr[i] != i + 100) FAIL("implicit tofrom of array: arr[%d]=%d", i, arr[i]);
  free(p);
  return 0;
}
