// Stress: 16 host threads x 2000 target regions over overlapping mapped sections.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define T 16
#define ITERS 2000
#define N 8192
#define LEN 64

static int start_of(int t, int k) { return (int)(((unsigned)t * 7919u + (unsigned)k * 104729u) % (N - LEN)); }

int main(void) {
  int *A = calloc(N, sizeof(int));
  long bad = 0;
#pragma omp target enter data map(to: A[0:N])
#pragma omp parallel num_threads(T) reduction(+: bad)
  {
    int t = omp_get_thread_num();
    for (int k = 0; k < ITERS; k++) {
      int s = start_of(t, k);
      int in = t * 100000 + k, out = -1;
      // overlapping subsections of the mapped array + a per-region private scalar round trip
#pragma omp target map(tofrom: A[s:LEN]) map(to: in) map(from: out)
      {
        for (int i = s; i < s + LEN; i++) {
#pragma omp atomic
          A[i]++;
        }
        out = in * 2 + omp_is_initial_device();
      }
      if (out != 2 * in) bad++;
    }
  }
#pragma omp target exit data map(from: A[0:N])
  if (bad) FAIL("%ld target regions returned wrong private results", bad);
  int *want = calloc(N, sizeof(int));
  for (int t = 0; t < T; t++)
    for (int k = 0; k < ITERS; k++)
      for (int i = start_of(t, k); i < start_of(t, k) + LEN; i++) want[i]++;
  for (int i = 0; i < N; i++)
    if (A[i] != want[i]) FAIL("A[%d]=%d expected %d", i, A[i], want[i]);
  free(A); free(want);
  return 0;
}
