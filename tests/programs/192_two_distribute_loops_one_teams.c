// One target teams region with two distribute parallel for loops, each with its own
// reduction (issue 31): each loop's reduction must reach its own variable, whatever the
// runtime does across the chunks of one loop.
// On the CPU plugin libomp forms the teams; the ENV lines let it form them as asked.
// ENV: KMP_TEAMS_THREAD_LIMIT=8192
// ENV: OMP_NUM_THREADS=8
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 50021

int main(void) {
  long a = 0, b = 0;
  double c = 0;
#pragma omp target teams num_teams(4) thread_limit(128) map(tofrom: a, b, c)
  {
#pragma omp distribute parallel for reduction(+ : a)
    for (int i = 0; i < N; i++) a += i % 97;
#pragma omp distribute parallel for reduction(+ : b, c)
    for (int i = 0; i < N; i++) {
      b += 2 * (i % 89);
      c += 0.5 * (i % 4);
    }
  }
  long ea = 0, eb = 0;
  double ec = 0;
  for (int i = 0; i < N; i++) {
    ea += i % 97;
    eb += 2 * (i % 89);
    ec += 0.5 * (i % 4);
  }
  if (a != ea) FAIL("first loop: %ld, expected %ld", a, ea);
  if (b != eb) FAIL("second loop: %ld, expected %ld", b, eb);
  if (c != ec) FAIL("second loop's double: %g, expected %g", c, ec);
  return 0;
}
