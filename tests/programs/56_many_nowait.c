// Many independent nowait target regions, then one taskwait.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define R 256
#define CH 64

int main(void) {
  int *a = malloc(R * CH * sizeof(int));
  int ran_on_dev[R];
  for (int i = 0; i < R * CH; i++) a[i] = i;
  for (int r = 0; r < R; r++) ran_on_dev[r] = 0;
  for (int r = 0; r < R; r++) {
#pragma omp target map(tofrom: a[r * CH:CH], ran_on_dev[r:1]) nowait
    {
      ran_on_dev[r] = !omp_is_initial_device();
      for (int i = r * CH; i < (r + 1) * CH; i++) a[i] = a[i] * 2 + r;
    }
  }
#pragma omp taskwait
  for (int r = 0; r < R; r++)
    if (!ran_on_dev[r]) FAIL("nowait region %d did not run on the device", r);
  for (int i = 0; i < R * CH; i++)
    if (a[i] != i * 2 + i / CH) FAIL("a[%d]=%d expected %d", i, a[i], i * 2 + i / CH);
  // many nowait regions on the same present array, disjoint chunks, inside target data
#pragma omp target data map(tofrom: a[0:R*CH])
  {
    for (int r = 0; r < R; r++) {
#pragma omp target nowait firstprivate(r)
      for (int i = r * CH; i < (r + 1) * CH; i++) a[i] += 1;
    }
#pragma omp taskwait
  }
  for (int i = 0; i < R * CH; i++)
    if (a[i] != i * 2 + i / CH + 1) FAIL("second pass a[%d]=%d", i, a[i]);
  free(a);
  return 0;
}
