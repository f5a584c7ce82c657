// Generic-mode kernels (sequential code, then a nested parallel region) that call printf in the
// sequential part: every worker must see the same team state as the main thread (thread count,
// thread numbers, level, team number, shared locals written before the region), and the main
// thread must see the workers' writes afterwards. Also under thread_limit(128) with 64 threads and
// in target teams num_teams(4). (On nvptx a device runtime linked twice gave workers other state.)
// The printf is guarded by a condition that is false at run time, so nothing is printed.
// On the CPU plugin libomp runs the teams construct: it caps a team's parallel region by
// nthreads-var and the teams thread limit, so the ENV lines let it form 4 teams of 32 threads;
// there (only) a smaller team is accepted if it is consistent. GPUs must give exactly 32.
// ENV: KMP_TEAMS_THREAD_LIMIT=256
// ENV: OMP_NUM_THREADS=32
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define MAXT 128
#define TEAMS 4

// Per-slot record: thread number, team size, level, team number, value of the shared local.
typedef struct { int tid, nthr, level, team, seen, in_par; } rec_t;

static void clear(rec_t *r, int n) {
  for (int i = 0; i < n; i++) r[i] = (rec_t){-1, -1, -1, -1, -1, -1};
}

static void check_team(const rec_t *r, int want_n, int team, int magic, const char *what) {
  for (int t = 0; t < MAXT; t++) {
    const rec_t *x = &r[t];
    if (t >= want_n) {
      if (x->tid != -1) FAIL("%s: team %d slot %d written (tid %d) but only %d threads wanted", what, team, t, x->tid, want_n);
      continue;
    }
    if (x->tid != t) FAIL("%s: team %d slot %d: thread number %d", what, team, t, x->tid);
    if (x->nthr != want_n) FAIL("%s: team %d thread %d: omp_get_num_threads()=%d, expected %d", what, team, t, x->nthr, want_n);
    if (x->level != 1) FAIL("%s: team %d thread %d: omp_get_level()=%d, expected 1", what, team, t, x->level);
    if (x->team != team) FAIL("%s: team %d thread %d: omp_get_team_num()=%d", what, team, t, x->team);
    if (x->in_par != (want_n > 1)) FAIL("%s: team %d thread %d: omp_in_parallel()=%d", what, team, t, x->in_par);
    if (x->seen != magic) FAIL("%s: team %d thread %d read shared local %d, expected %d", what, team, t, x->seen, magic);
  }
}

int main(int argc, char **argv) {
  (void)argv;
  int verbose = argc > 100; // false at run time, unknown to the compiler
  static rec_t r[TEAMS * MAXT];
  int ondev = 0, gpu = 0, after = -1, seq_level = -1, seq_inpar = -1;

  // 1. plain target (generic): printf in the sequential part, then parallel num_threads(32).
  clear(r, MAXT);
#pragma omp target map(tofrom: r[0:MAXT], ondev, gpu, after, seq_level, seq_inpar) firstprivate(verbose)
  {
    gpu = 0; // host and device code must use the same variables (see tests/programs/README.md)
#if defined(__NVPTX__) || defined(__AMDGPU__) || defined(__AMDGCN__)
    gpu = 1;
#endif
    int magic = 1000 + verbose; // a local of the sequential part, shared by the region (not a
                                // compile-time constant, so workers must really read it)
    int sum = 0;                // written by the workers, read by the main thread afterwards
    ondev = !omp_is_initial_device();
    seq_level = omp_get_level();
    seq_inpar = omp_in_parallel();
    if (verbose) printf("generic kernel, team %d\n", omp_get_team_num());
#pragma omp parallel num_threads(32) shared(magic, sum)
    {
      int t = omp_get_thread_num();
      if (t >= 0 && t < MAXT)
        r[t] = (rec_t){t, omp_get_num_threads(), omp_get_level(), omp_get_team_num(), magic, omp_in_parallel()};
#pragma omp atomic
      sum += t + 1;
    }
    after = sum;
  }
  if (!ondev) FAIL("generic region ran on the host");
  if (seq_level != 0 || seq_inpar != 0) FAIL("sequential part: level %d in_parallel %d, expected 0 0", seq_level, seq_inpar);
  check_team(r, 32, 0, 1000 + verbose, "num_threads(32)");
  if (after != 32 * 33 / 2) FAIL("num_threads(32): main thread saw sum %d after the region, expected %d", after, 32 * 33 / 2);

  // 2. generic under thread_limit(128), parallel num_threads(64); two regions in one kernel.
  clear(r, 2 * MAXT);
  after = -1;
  int after2 = -1;
#pragma omp target thread_limit(128) map(tofrom: r[0:2 * MAXT], after, after2) firstprivate(verbose)
  {
    int magic = 2000 + verbose, sum = 0;
    if (verbose) printf("thread_limit(128) kernel\n");
#pragma omp parallel num_threads(64)
    {
      int t = omp_get_thread_num();
      if (t >= 0 && t < MAXT)
        r[t] = (rec_t){t, omp_get_num_threads(), omp_get_level(), omp_get_team_num(), magic, omp_in_parallel()};
#pragma omp atomic
      sum += t + 1;
    }
    after = sum;
    magic = 3000 + sum; // changed between the regions: the second must see the new value
    sum = 0;
    if (verbose) printf("between regions\n");
#pragma omp parallel num_threads(32)
    {
      int t = omp_get_thread_num();
      if (t >= 0 && t < MAXT)
        r[MAXT + t] = (rec_t){t, omp_get_num_threads(), omp_get_level(), omp_get_team_num(), magic, omp_in_parallel()};
#pragma omp atomic
      sum += 2 * t;
    }
    after2 = sum;
  }
  check_team(r, 64, 0, 2000 + verbose, "thread_limit(128) num_threads(64)");
  if (after != 64 * 65 / 2) FAIL("num_threads(64): main thread saw sum %d, expected %d", after, 64 * 65 / 2);
  check_team(r + MAXT, 32, 0, 3000 + 64 * 65 / 2, "second region num_threads(32)");
  if (after2 != 32 * 31) FAIL("second region: main thread saw sum %d, expected %d", after2, 32 * 31);

  // 3. target teams num_teams(4): each team's sequential part runs, then its own parallel region.
  clear(r, TEAMS * MAXT);
  int nteams = -1, team_sum[TEAMS], team_runs[TEAMS];
  for (int i = 0; i < TEAMS; i++) team_sum[i] = -1, team_runs[i] = 0;
#pragma omp target teams num_teams(TEAMS) thread_limit(64) map(tofrom: r[0:TEAMS * MAXT], nteams, team_sum, team_runs) firstprivate(verbose)
  {
    int tm = omp_get_team_num();
    if (tm == 0) nteams = omp_get_num_teams();
    int magic = 4000 + 10 * tm + verbose, sum = 0;
    if (verbose && tm == 0) printf("teams kernel\n");
    if (tm >= 0 && tm < TEAMS) {
      team_runs[tm]++;
#pragma omp parallel num_threads(32)
      {
        int t = omp_get_thread_num();
        if (t >= 0 && t < MAXT)
          r[tm * MAXT + t] = (rec_t){t, omp_get_num_threads(), omp_get_level(), omp_get_team_num(), magic, omp_in_parallel()};
#pragma omp atomic
        sum += t + 100 * tm;
      }
      team_sum[tm] = sum;
    }
  }
  if (nteams < 1 || nteams > TEAMS || (gpu && nteams != TEAMS)) FAIL("num_teams(%d): omp_get_num_teams()=%d", TEAMS, nteams);
  for (int tm = 0; tm < TEAMS; tm++) {
    if (tm >= nteams) {
      if (team_runs[tm] != 0) FAIL("team %d ran but there are %d teams", tm, nteams);
      continue;
    }
    if (team_runs[tm] != 1) FAIL("team %d sequential part ran %d times", tm, team_runs[tm]);
    int n = r[tm * MAXT].nthr; // on a CPU device libomp may give a team fewer threads
    if (gpu ? n != 32 : (n < 1 || n > 32)) FAIL("team %d: parallel num_threads(32) got %d threads", tm, n);
    check_team(r + tm * MAXT, n, tm, 4000 + 10 * tm + verbose, "teams num_threads(32)");
    int want = n * (n - 1) / 2 + n * 100 * tm;
    if (team_sum[tm] != want) FAIL("team %d: main thread saw sum %d, expected %d", tm, team_sum[tm], want);
  }
  return 0;
}
