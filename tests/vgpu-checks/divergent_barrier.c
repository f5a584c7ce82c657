// A planted barrier in divergent code: in a parallel region of the whole team, only threads
// 0-31 reach `#pragma omp barrier`; the others go on to the end of the region. On a GPU the
// team's one hardware barrier lets both groups pass together, each at a different barrier, and
// the program goes on as if the barrier held; the virtual GPU's synccheck names both groups.
// CFLAGS: -g
// EXPECT: abort
// EXPECT-STDERR: a barrier reached in divergent code: threads 0-31 are at an OpenMP barrier
// EXPECT-STDERR: divergent_barrier.c:20:
// EXPECT-STDERR: threads 32-63 at another barrier
#include <omp.h>
#include <stdio.h>
int main(void) {
  int out[64] = {0};
#pragma omp target teams num_teams(1) thread_limit(64) map(tofrom: out)
  {
#pragma omp parallel num_threads(64)
    {
      int t = omp_get_thread_num();
      if (t < 32) {
#pragma omp barrier
      }
      out[t] = t;
    }
  }
  printf("out[63] = %d\n", out[63]);
  return 0;
}
