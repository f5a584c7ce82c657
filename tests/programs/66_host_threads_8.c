// 8 host threads (omp parallel) issuing target regions on overlapping sections of a shared
// mapped array, plus private per-thread mappings. Results must be exact.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define T 8
#define N 4096
#define ROUNDS 50
#define LEN 300

static int start_of(int t, int r) { return (t * 509 + r * 97) % (N - LEN); }

int main(void) {
  int dev = omp_get_default_device();
  int *A = calloc(N, sizeof(int));
  int errors = 0, offdev = 0;
#pragma omp target data map(tofrom: A[0:N])
  {
#pragma omp parallel num_threads(T) reduction(+: errors, offdev)
    {
      int t = omp_get_thread_num();
      int mine[64];
      for (int r = 0; r < ROUNDS; r++) {
        int s = start_of(t, r);
        for (int i = 0; i < 64; i++) mine[i] = t * 1000 + r + i;
        int host_flag = 0;
        // A[s:LEN] is contained in the outer mapping: no transfers, shared device copy
#pragma omp target map(tofrom: A[s:LEN]) map(tofrom: mine) map(from: host_flag)
        {
          host_flag = omp_is_initial_device();
          for (int i = s; i < s + LEN; i++) {
#pragma omp atomic
            A[i] += 1;
          }
          for (int i = 0; i < 64; i++) mine[i] = mine[i] * 2 + 1;
        }
        offdev += host_flag;
        for (int i = 0; i < 64; i++)
          if (mine[i] != 2 * (t * 1000 + r + i) + 1) errors++;
      }
      // per-thread unstructured mapping of private data
      int buf[128];
      for (int i = 0; i < 128; i++) buf[i] = t;
#pragma omp target enter data map(to: buf)
      for (int r = 0; r < 10; r++) {
#pragma omp target map(tofrom: buf)
        for (int i = 0; i < 128; i++) buf[i] += i;
      }
      if (!omp_target_is_present(buf, dev)) errors++;
#pragma omp target exit data map(from: buf)
      for (int i = 0; i < 128; i++)
        if (buf[i] != t + 10 * i) errors++;
    }
    if (A[0] != 0) FAIL("shared array copied back before target data end");
  }
  if (offdev) FAIL("%d target regions ran on the host", offdev);
  if (errors) FAIL("%d wrong private results in host threads", errors);
  int *want = calloc(N, sizeof(int));
  for (int t = 0; t < T; t++)
    for (int r = 0; r < ROUNDS; r++)
      for (int i = start_of(t, r); i < start_of(t, r) + LEN; i++) want[i]++;
  for (int i = 0; i < N; i++)
    if (A[i] != want[i]) FAIL("A[%d]=%d expected %d", i, A[i], want[i]);
  free(A); free(want);
  return 0;
}
