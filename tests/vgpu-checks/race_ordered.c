// The negative control of race.c: the same accesses ordered by a barrier, by a critical
// section, and by a lock (which the runtime builds from atomics). No hazard is reported and
// the values are exact.
// CFLAGS: -g
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) {
  int out = -1, counted = -1, locked = -1;
#pragma omp target teams num_teams(2) thread_limit(128) map(tofrom: out, counted, locked)
  {
    int shared_x = 0, count = 0, by_lock = 0;
    omp_lock_t lock;
    omp_init_lock(&lock);
#pragma omp parallel num_threads(64)
    {
      if (omp_get_thread_num() == 5) shared_x = 42;
#pragma omp barrier
      if (omp_get_thread_num() == 40 && omp_get_team_num() == 0) out = shared_x;
#pragma omp critical
      count++;
      omp_set_lock(&lock);
      by_lock += 2;
      omp_unset_lock(&lock);
    }
    omp_destroy_lock(&lock);
    if (omp_get_team_num() == 0) {
      counted = count;
      locked = by_lock;
    }
  }
  printf("out = %d, counted = %d, locked = %d\n", out, counted, locked);
  if (out != 42 || counted != 64 || locked != 128) return 1;
  return 0;
}
