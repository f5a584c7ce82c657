// One parallel region per row of a chunked distribute loop, holding two worksharing loops
// with different reductions (+ on double, max on int) (issue 31): a runtime that defers one
// reduction callback per distribute loop meets a second callback in the same region.
// On the CPU plugin libomp forms the teams; the ENV lines let it form them as asked.
// ENV: KMP_TEAMS_THREAD_LIMIT=8192
// ENV: OMP_NUM_THREADS=8
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define ROWS 29
#define COLS 257

int main(void) {
  static double sums[ROWS];
  static int maxes[ROWS];
  for (int r = 0; r < ROWS; r++) sums[r] = -1, maxes[r] = -1;
#pragma omp target teams distribute dist_schedule(static, 5) num_teams(3) thread_limit(96) \
    map(tofrom: sums[0:ROWS], maxes[0:ROWS])
  for (int r = 0; r < ROWS; r++) {
    double a = 0;
    int b = 0;
#pragma omp parallel
    {
#pragma omp for reduction(+ : a)
      for (int c = 0; c < COLS; c++) a += 0.125 * (c % 8) + r;
#pragma omp for reduction(max : b)
      for (int c = 0; c < COLS; c++) b = (c * 7 + r) % 101 > b ? (c * 7 + r) % 101 : b;
    }
    sums[r] = a;
    maxes[r] = b;
  }
  for (int r = 0; r < ROWS; r++) {
    double a = 0;
    int b = 0;
    for (int c = 0; c < COLS; c++) {
      a += 0.125 * (c % 8) + r;
      if ((c * 7 + r) % 101 > b) b = (c * 7 + r) % 101;
    }
    if (sums[r] != a) FAIL("row %d: sum %g, expected %g", r, sums[r], a);
    if (maxes[r] != b) FAIL("row %d: max %d, expected %d", r, maxes[r], b);
  }
  return 0;
}
