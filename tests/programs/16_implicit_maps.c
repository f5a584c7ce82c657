// Implicit data-mapping attributes: scalars firstprivate, arrays tofrom, pointers attached.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 20

int main(void) {
  int s = 10, init = -1;
  double d = 2.5;
  int arr[N];
  for (int i = 0; i < N; i++) arr[i] = i;
#pragma omp target map(from: init)
  {
    init = omp_is_initial_device();
    s += 5;   // firstprivate: private copy initialized with 10
    d *= 4.0;
    arr[0] = s * 100 + (int)d; // arrays: implicit tofrom
  }
  if (init != 0) FAIL("region ran on host");
  if (s != 10) FAIL("implicitly firstprivate scalar copied back: s=%d", s);
  if (d != 2.5) FAIL("implicitly firstprivate double copied back: d=%g", d);
  if (arr[0] != 1510) FAIL("firstprivate scalar initial value wrong or array not tofrom: arr[0]=%d", arr[0]);
  // firstprivate scalars even when the variable is present on the device
#pragma omp target enter data map(to: s)
  s = 20;
#pragma omp target map(from: init)
  init = s; // uses the host value (firstprivate), not the present device copy (10)
  if (init != 20) FAIL("scalar referenced in target was not firstprivate: saw %d", init);
#pragma omp target exit data map(delete: s)
  // defaultmap(tofrom: scalar) makes scalars mapped tofrom
#pragma omp target defaultmap(tofrom: scalar)
  s += 1;
  if (s != 21) FAIL("defaultmap(tofrom:scalar) did not copy back: s=%d", s);
  // pointer referenced in target: zero-length section, attached to enclosing mapping
  int *p = malloc(N * sizeof(int));
  for (int i = 0; i < N; i++) p[i] = i;
#pragma omp target data map(tofrom: p[0:N])
  {
#pragma omp target
    for (int i = 0; i < N; i++) p[i] = p[i] * 3; // p translated to device address
    if (p[5] != 5) FAIL("device write through implicitly mapped pointer visible on host early");
  }
  for (int i = 0; i < N; i++)
    if (p[i] != 3 * i) FAIL("p[%d]=%d expected %d", i, p[i], 3 * i);
  free(p);
  return 0;
}
