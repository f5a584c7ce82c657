// A planted race in team memory: thread 5 writes a variable of the team's code that the
// parallel region shares, thread 40 reads it, and no barrier lies between them. On a GPU the
// read may see either value; the virtual GPU's racecheck names both accesses and fails the
// launch.
// CFLAGS: -g
// EXPECT: abort
// EXPECT-STDERR: racecheck: Read-after-Write hazard in team 0
// EXPECT-STDERR: thread 40 reads it in
// EXPECT-STDERR: race.c:23:
// EXPECT-STDERR: thread 5 wrote it in
// EXPECT-STDERR: race.c:22:
// EXPECT-STDERR: racecheck found 1 hazard(s)
#include <omp.h>
#include <stdio.h>
int main(void) {
  int out = -1;
#pragma omp target teams num_teams(1) thread_limit(128) map(tofrom: out)
  {
    int shared_x = 0;
#pragma omp parallel num_threads(64)
    {
      if (omp_get_thread_num() == 5) shared_x = 42;
      if (omp_get_thread_num() == 40) out = shared_x;
    }
  }
  printf("out = %d\n", out);
  return 0;
}
