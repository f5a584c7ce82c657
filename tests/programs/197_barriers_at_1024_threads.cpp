// Two kernels in one file, each `target teams num_teams(4) thread_limit(1024)` with a team-local
// array declared in the teams region and a `parallel num_threads(1024)` region that fills it,
// passes `#pragma omp barrier` several times and reads other threads' elements after each.
// Kernel 1: write, barrier, read both neighbours, barrier, overwrite, barrier, read again.
// Kernel 2: an inclusive prefix sum over the team (Hillis-Steele: two barriers per step,
// ten steps at 1024 threads). This shape once failed to build for sm_90 ("max regcount of 64
// calls function ... with regcount of 67": thread_limit(1024) caps the kernel at 64 registers,
// and a device runtime function it calls used more). The checks hold for whatever team size
// the runtime gives (the CPU plugin's teams are smaller): each team reports its thread count.
// On the CPU plugin libomp forms the teams (by default only as many as there are cores, of one
// thread each); the ENV lines give it four teams of 16 threads.
// ENV: KMP_TEAMS_THREAD_LIMIT=64
// ENV: OMP_NUM_THREADS=16
#include <omp.h>
#include <cstdio>
#include <cstdlib>
#define FAIL(...) do { std::fprintf(stderr, __VA_ARGS__); std::fputc('\n', stderr); std::exit(1); } while (0)

constexpr int TEAMS = 4;
constexpr int THREADS = 1024;

static double first(int team, int t) { return team * 10000.0 + t; }

int main() {
  static double out1[TEAMS * THREADS], out2[TEAMS * THREADS];
  int nthreads[TEAMS], nteams = 0, on_device = 0;
  for (int i = 0; i < TEAMS * THREADS; i++) out1[i] = out2[i] = -1;
  for (int t = 0; t < TEAMS; t++) nthreads[t] = 0;

#pragma omp target teams num_teams(TEAMS) thread_limit(THREADS) \
    map(tofrom: out1, nthreads, nteams, on_device)
  {
    double tile[THREADS];
    int team = omp_get_team_num();
    if (team == 0) {
      nteams = omp_get_num_teams();
      on_device = !omp_is_initial_device();
    }
#pragma omp parallel num_threads(THREADS)
    {
      int t = omp_get_thread_num(), n = omp_get_num_threads();
      tile[t] = team * 10000.0 + t;
#pragma omp barrier
      double left = tile[(t + n - 1) % n], right = tile[(t + 1) % n];
#pragma omp barrier
      tile[t] = left + 2 * right;
#pragma omp barrier
      out1[team * THREADS + t] = tile[(t + 1) % n] - tile[t];
      if (t == 0) nthreads[team] = n;
    }
  }
  if (!on_device) FAIL("kernel 1 did not run on the device");
  if (nteams < 1 || nteams > TEAMS) FAIL("kernel 1: %d teams, asked for at most %d", nteams, TEAMS);
  for (int team = 0; team < nteams; team++) {
    int n = nthreads[team];
    if (n < 1 || n > THREADS) FAIL("kernel 1, team %d: %d threads", team, n);
    for (int t = 0; t < THREADS; t++) {
      double got = out1[team * THREADS + t], want = -1;
      if (t < n) {
        // tile[u] after the second step: first(u-1) + 2 * first(u+1), indices mod n.
        auto second = [&](int u) { return first(team, (u + n - 1) % n) + 2 * first(team, (u + 1) % n); };
        want = second((t + 1) % n) - second(t);
      }
      if (got != want) FAIL("kernel 1, team %d (%d threads), thread %d: %.1f, expected %.1f", team, n, t, got, want);
    }
  }

  for (int t = 0; t < TEAMS; t++) nthreads[t] = 0;
  nteams = 0;
  on_device = 0;
#pragma omp target teams num_teams(TEAMS) thread_limit(THREADS) \
    map(tofrom: out2, nthreads, nteams, on_device)
  {
    double tile[THREADS];
    int team = omp_get_team_num();
    if (team == 0) {
      nteams = omp_get_num_teams();
      on_device = !omp_is_initial_device();
    }
#pragma omp parallel num_threads(THREADS)
    {
      int t = omp_get_thread_num(), n = omp_get_num_threads();
      tile[t] = (t % 7) + team;
#pragma omp barrier
      for (int step = 1; step < n; step *= 2) {
        double v = tile[t] + (t >= step ? tile[t - step] : 0.0);
#pragma omp barrier
        tile[t] = v;
#pragma omp barrier
      }
      out2[team * THREADS + t] = tile[t];
      if (t == 0) nthreads[team] = n;
    }
  }
  if (!on_device) FAIL("kernel 2 did not run on the device");
  if (nteams < 1 || nteams > TEAMS) FAIL("kernel 2: %d teams, asked for at most %d", nteams, TEAMS);
  for (int team = 0; team < nteams; team++) {
    int n = nthreads[team];
    if (n < 1 || n > THREADS) FAIL("kernel 2, team %d: %d threads", team, n);
    double prefix = 0;
    for (int t = 0; t < THREADS; t++) {
      double want = -1;
      if (t < n) want = prefix += (t % 7) + team;
      double got = out2[team * THREADS + t];
      if (got != want) FAIL("kernel 2, team %d (%d threads), thread %d: prefix %.1f, expected %.1f", team, n, t, got, want);
    }
  }
  return 0;
}
