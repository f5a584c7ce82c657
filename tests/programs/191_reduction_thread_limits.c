// target teams distribute parallel for with double and long sum reductions at thread_limit
// 256, 512 and 1024 (issue 31, issue 32 item 2): the deferral of the reductions across
// distribute chunks needs team memory that grows with the team; where it does not fit, the
// runtime must reduce chunk by chunk, never lose or double a value.
// On the CPU plugin libomp forms the teams; the ENV lines let it form them as asked.
// ENV: KMP_TEAMS_THREAD_LIMIT=8192
// ENV: OMP_NUM_THREADS=8
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 100003

static double x[N];

#define DO_PRAGMA(text) _Pragma(#text)
#define CHECK_AT(LIMIT)                                                                  \
  do {                                                                                   \
    double d = 0;                                                                        \
    long l = 0;                                                                          \
    DO_PRAGMA(omp target teams distribute parallel for num_teams(5) thread_limit(LIMIT)  \
              reduction(+ : d, l) map(to: x[0:N]))                                       \
    for (int i = 0; i < N; i++) {                                                        \
      d += x[i];                                                                         \
      l += i % 1000;                                                                     \
    }                                                                                    \
    if (d != expect_d) FAIL("thread_limit %d: double sum %.3f, expected %.3f", LIMIT, d, expect_d); \
    if (l != expect_l) FAIL("thread_limit %d: long sum %ld, expected %ld", LIMIT, l, expect_l); \
  } while (0)

int main(void) {
  double expect_d = 0;
  long expect_l = 0;
  for (int i = 0; i < N; i++) {
    x[i] = 0.25 * (i % 16);
    expect_d += x[i];
    expect_l += i % 1000;
  }
  CHECK_AT(256);
  CHECK_AT(512);
  CHECK_AT(1024);
  return 0;
}
