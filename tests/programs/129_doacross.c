// Doacross loops inside target regions: #pragma omp for ordered(1) with
// ordered depend(sink: i-1) / depend(source) in a parallel region, computing a chain
// a[i] = a[i-1] + 1 whose every element must be exact (the array starts at -1000, so reading an
// element before its source ran shows). Static chunk 1 (neighbouring iterations on different
// threads), dynamic and a sink two iterations back (two interleaved chains), a 2-D nest
// ordered(2) with sinks (i-1,j) and (i,j-1) (wavefront sums), and the 5.2 spelling
// doacross(sink: i-1) / doacross(source:) when compiled for OpenMP 5.2 (the CFLAGS line). Each
// iteration also takes a ticket (atomic capture) between its sink wait and its source: the
// tickets of a chain must increase.
// CFLAGS: -fopenmp-version=52 -Wno-deprecated
// ENV: OMP_NUM_THREADS=8
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define NT 8
#define N 400
#define R 24
#define C 17
#define NCHAIN 4

int main(int argc, char **argv) {
  (void)argv;
  int n = N + (argc > 100), rows = R + (argc > 100), cols = C + (argc > 100);
  // Locals, not statics (a static local referenced in a nested construct may be the device's own
  // copy rather than the mapped one).
  int a[NCHAIN][N + 1], tk[NCHAIN][N + 1];
  long w[R][C];
  for (int c = 0; c < NCHAIN; c++)
    for (int i = 0; i <= N; i++) a[c][i] = -1000, tk[c][i] = -1;
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) w[i][j] = -1000;
  int ondev = 0, nthr = -1, spelled52 = 0;

#pragma omp target map(tofrom: a, tk, w, ondev, nthr, spelled52) firstprivate(n, rows, cols)
  {
    ondev = !omp_is_initial_device();
    int ticket = 0;
#pragma omp parallel num_threads(NT) shared(ticket)
    {
      if (omp_get_thread_num() == 0) nthr = omp_get_num_threads();
      // 0: static chunk 1, depend(sink: i-1)
#pragma omp for ordered(1) schedule(static, 1)
      for (int i = 0; i < n; i++) {
        int prev = 0;
        if (i > 0) {
#pragma omp ordered depend(sink: i - 1)
          prev = a[0][i - 1] + 1;
        }
        a[0][i] = prev;
#pragma omp atomic capture
        tk[0][i] = ticket++;
#pragma omp ordered depend(source)
      }
      // 1: dynamic schedule
#pragma omp for ordered(1) schedule(dynamic, 3)
      for (int i = 0; i < n; i++) {
        if (i > 0) {
#pragma omp ordered depend(sink: i - 1)
        }
        a[1][i] = i > 0 ? a[1][i - 1] + 1 : 0;
#pragma omp atomic capture
        tk[1][i] = ticket++;
#pragma omp ordered depend(source)
      }
      // 2: sink two iterations back: two interleaved chains (even and odd)
#pragma omp for ordered(1) schedule(static, 1)
      for (int i = 0; i < n; i++) {
#pragma omp ordered depend(sink: i - 2)
        a[2][i] = i >= 2 ? a[2][i - 2] + 1 : i; // even i: i/2, odd i: 1 + (i-1)/2
#pragma omp atomic capture
        tk[2][i] = ticket++;
#pragma omp ordered depend(source)
      }
      // 3: 2-D wavefront: w[i][j] = w[i-1][j] + w[i][j-1] + 1 (sinks outside the space are ignored)
#pragma omp for ordered(2) schedule(static, 1)
      for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
#pragma omp ordered depend(sink: i - 1, j) depend(sink: i, j - 1)
          long up = i > 0 ? w[i - 1][j] : 0, left = j > 0 ? w[i][j - 1] : 0;
          w[i][j] = up + left + 1;
#pragma omp ordered depend(source)
        }
#if _OPENMP >= 202111
      // 4 (chain 3): the OpenMP 5.2 spelling
#pragma omp single
      spelled52 = 1;
#pragma omp for ordered(1) schedule(static, 2)
      for (int i = 0; i < n; i++) {
#pragma omp ordered doacross(sink: i - 1)
        a[3][i] = i > 0 ? a[3][i - 1] + 1 : 0;
#pragma omp atomic capture
        tk[3][i] = ticket++;
#pragma omp ordered doacross(source:)
      }
#endif
    }
  }
  if (!ondev) FAIL("target region ran on the host");
  if (nthr < 1 || nthr > NT) FAIL("parallel num_threads(%d) gave %d threads", NT, nthr);
  static const char *names[NCHAIN] = {"ordered(1) static,1 sink i-1", "ordered(1) dynamic,3 sink i-1",
                                      "ordered(1) static,1 sink i-2", "doacross(sink: i-1) spelling"};
  for (int c = 0; c < NCHAIN; c++) {
    if (c == 3 && !spelled52) continue;
    for (int i = 0; i <= N; i++) {
      int want = i >= n ? -1000 : c == 2 ? (i % 2 ? 1 + (i - 1) / 2 : i / 2) : i;
      if (a[c][i] != want) FAIL("%s: a[%d] = %d, expected %d", names[c], i, a[c][i], want);
      if (i < n && tk[c][i] < 0) FAIL("%s: iteration %d took no ticket", names[c], i);
      int back = c == 2 ? 2 : 1;
      if (i >= back && i < n && tk[c][i] <= tk[c][i - back])
        FAIL("%s: iteration %d ran before its sink iteration %d finished (tickets %d <= %d)", names[c], i, i - back,
             tk[c][i], tk[c][i - back]);
    }
  }
  // w[i][j] = C(i+j+2, i+1) - 1 for the recurrence with w[-1][*] = w[*][-1] = 0
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      long want;
      if (i >= rows || j >= cols) want = -1000;
      else {
        // binomial(i + j + 2, i + 1) - 1, computed exactly
        long b = 1;
        for (int k = 1; k <= i + 1; k++) b = b * (j + 1 + k) / k;
        want = b - 1;
      }
      if (w[i][j] != want) FAIL("ordered(2) wavefront: w[%d][%d] = %ld, expected %ld", i, j, w[i][j], want);
    }
#if _OPENMP >= 202111
  if (!spelled52) FAIL("the doacross loop did not run");
#endif
  return 0;
}
