// Reductions across teams: teams reduction, distribute reduction, nested team+thread levels.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 10000

int main(void) {
  int nteams = 0, teamsum = 0;
#pragma omp target teams num_teams(2) reduction(+: nteams, teamsum)
  {
    nteams += 1;
    teamsum += omp_get_team_num() + 1;
  }
  int nt = 0;
#pragma omp target teams num_teams(2) map(tofrom: nt)
  if (omp_get_team_num() == 0) nt = omp_get_num_teams();
  if (nteams != nt) FAIL("teams reduction counted %d teams, omp_get_num_teams()=%d", nteams, nt);
  if (teamsum != nt * (nt + 1) / 2) FAIL("teams reduction sum=%d", teamsum);
  long s = 0;
  int dev = 0;
#pragma omp target teams distribute reduction(+: s) reduction(max: dev)
  for (int i = 0; i < N; i++) {
    s += i;
    dev = !omp_is_initial_device();
  }
  if (dev != 1) FAIL("distribute loop ran on host");
  if (s != (long)N * (N - 1) / 2) FAIL("distribute reduction: %ld", s);
  // per-team partial sums combined on the host from a mapped array
  long part[8] = {0};
  long total = 0;
#pragma omp target teams num_teams(2) map(tofrom: part) reduction(+: total)
  {
    long mine = 0;
#pragma omp distribute
    for (int i = 0; i < N; i++) mine += i % 10;
    part[omp_get_team_num() % 8] = mine;
    total += mine;
  }
  long chk = 0;
  for (int t = 0; t < 8; t++) chk += part[t];
  if (total != 4L * N + N / 10 * 5) FAIL("teams total=%ld", total);
  if (chk != total) FAIL("per-team partials %ld != reduction %ld", chk, total);
  // double reduction over teams + threads
  double d = 0;
#pragma omp target teams distribute parallel for reduction(+: d)
  for (int i = 0; i < N; i++) d += 0.25;
  if (d != N * 0.25) FAIL("double teams reduction: %g", d);
  return 0;
}
