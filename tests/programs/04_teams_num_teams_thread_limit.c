// target teams with num_teams/thread_limit; omp_get_team_num, omp_get_num_teams inside.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define MAXT 64

int main(void) {
  int team_hits[MAXT] = {0}, team_threads[MAXT] = {0};
  int nteams = -1, bad = 0, ondev = 1;
#pragma omp target teams num_teams(2) thread_limit(1) map(tofrom: team_hits, team_threads, nteams, bad, ondev)
  {
    int tn = omp_get_team_num();
    int nt = omp_get_num_teams();
    if (tn == 0) nteams = nt;
    if (tn < 0 || tn >= nt || tn >= MAXT) bad = 1;
    else team_hits[tn] += 1;
    if (omp_is_initial_device()) ondev = 0;
#pragma omp parallel
    {
      if (omp_get_thread_num() == 0 && tn < MAXT) team_threads[tn] = omp_get_num_threads();
    }
  }
  if (!ondev) FAIL("teams region ran on the host");
  if (bad) FAIL("omp_get_team_num out of range");
  if (nteams < 1 || nteams > 2) FAIL("omp_get_num_teams()=%d, expected 1..2", nteams);
  for (int t = 0; t < MAXT; t++) {
    int want = t < nteams ? 1 : 0;
    if (team_hits[t] != want) FAIL("team %d executed %d times, expected %d", t, team_hits[t], want);
    if (t < nteams && team_threads[t] != 1)
      FAIL("team %d had %d threads, thread_limit is 1", t, team_threads[t]);
  }
  // distribute over teams: every iteration exactly once, team number recorded in range.
  int owner[256];
  for (int i = 0; i < 256; i++) owner[i] = -1;
#pragma omp target teams distribute num_teams(2) map(tofrom: owner)
  for (int i = 0; i < 256; i++) owner[i] = omp_get_team_num();
  for (int i = 0; i < 256; i++)
    if (owner[i] < 0 || owner[i] >= 2) FAIL("iteration %d owned by team %d", i, owner[i]);
  // a single team with thread_limit(2): parallel region gets 1..2 threads
  int nthr = -1;
#pragma omp target teams num_teams(1) thread_limit(2) map(tofrom: nthr)
#pragma omp parallel
  if (omp_get_thread_num() == 0) nthr = omp_get_num_threads();
  if (nthr < 1 || nthr > 2) FAIL("thread_limit(2): parallel had %d threads", nthr);
  return 0;
}
