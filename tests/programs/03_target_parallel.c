// target parallel: threads on the device, omp_get_thread_num / omp_get_num_threads.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int seen[64] = {0};
  int nthreads = -1, ondev = 0;
#pragma omp target parallel num_threads(4) map(tofrom: seen, nthreads, ondev)
  {
    int t = omp_get_thread_num();
    if (t < 64) {
#pragma omp atomic
      seen[t] += 1;
    }
    if (t == 0) { nthreads = omp_get_num_threads(); ondev = !omp_is_initial_device(); }
  }
  if (!ondev) FAIL("target parallel did not run on the device");
  if (nthreads < 1 || nthreads > 4) FAIL("omp_get_num_threads()=%d, expected 1..4", nthreads);
  for (int t = 0; t < 64; t++) {
    int want = t < nthreads ? 1 : 0;
    if (seen[t] != want) FAIL("thread %d ran %d times, expected %d", t, seen[t], want);
  }
  // target parallel for
  int a[1000];
  for (int i = 0; i < 1000; i++) a[i] = 0;
#pragma omp target parallel for map(tofrom: a)
  for (int i = 0; i < 1000; i++) a[i] += i + 1;
  for (int i = 0; i < 1000; i++)
    if (a[i] != i + 1) FAIL("a[%d]=%d, expected %d", i, a[i], i + 1);
  return 0;
}
