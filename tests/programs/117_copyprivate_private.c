// single copyprivate of private variables declared inside the parallel region (an int, a double,
// a 24-byte struct and an int[8] array) in target regions: the single thread's values, which
// depend on its thread number and the round, must reach every thread of the region. On GPUs
// such privates live in per-thread memory that other threads cannot read through a pointer, so
// the broadcast must go through memory the whole team can see. (a) target teams num_teams(2)
// thread_limit(64) + parallel num_threads(64); (b) a generic kernel (target, sequential code,
// parallel num_threads(32)); several rounds each, values changing per round.
// On the CPU plugin libomp caps the teams' parallel regions by nthreads-var and the teams thread
// limit; the ENV lines let it form full teams. Only there a smaller team is accepted.
// ENV: KMP_TEAMS_THREAD_LIMIT=256
// ENV: OMP_NUM_THREADS=64
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define ROUNDS 6
#define MAXT 64
#define TEAMS 2

typedef struct { int a; double b; short c; long d; } s24_t; // 24 bytes on LP64

// Value every thread must hold after round r of the region, given the single thread `w`.
static int want_i(int r, int w, int team) { return 1000 * r + 17 * w + 100000 * team + 1; }
static double want_d(int r, int w, int team) { return 0.5 * r + w * 0.25 + team * 1000.0 + 0.125; }
static long want_l(int r, int w, int team) { return ((long)r << 33) + 3L * w + team; }
static int want_arr(int r, int w, int team, int k) { return r * 64 + w * 8 + k + 7 * team; }

// Per round, per thread: who the single thread was (as seen by everyone) and a checksum of
// mismatches between what the thread holds and what the single thread set.
typedef struct { int winner[ROUNDS]; int bad[ROUNDS]; int nthr; } res_t;

#pragma omp declare target
// Runs in every thread: one round of single copyprivate, then records what arrived.
static void round_body(int r, int team, res_t *res, int *winner_seen) {
  int t = omp_get_thread_num();
  int i = -1;
  double d = -1.0;
  s24_t s = {-1, -1.0, -1, -1};
  int arr[8];
  for (int k = 0; k < 8; k++) arr[k] = -1 - k;
  int who = -1;
#pragma omp single copyprivate(i, d, s, arr, who)
  {
    who = t;
    i = want_i(r, t, team);
    d = want_d(r, t, team);
    s.a = i + 1;
    s.b = d * 2.0;
    s.c = (short)(t + r);
    s.d = want_l(r, t, team);
    for (int k = 0; k < 8; k++) arr[k] = want_arr(r, t, team, k);
    *winner_seen = t; // shared record of who executed the single
  }
  // every thread now must hold the single thread's values
  int w = who, bad = 0;
  if (i != want_i(r, w, team)) bad |= 1;
  if (d != want_d(r, w, team)) bad |= 2;
  if (s.a != want_i(r, w, team) + 1 || s.b != 2.0 * want_d(r, w, team) || s.c != (short)(w + r) ||
      s.d != want_l(r, w, team))
    bad |= 4;
  for (int k = 0; k < 8; k++)
    if (arr[k] != want_arr(r, w, team, k)) bad |= 8;
  if (w != *winner_seen) bad |= 16; // the broadcast `who` must be the real single thread
  if (t < MAXT) res[t].bad[r] = bad, res[t].winner[r] = w;
}
#pragma omp end declare target

static void check(const res_t *res, int nthr, const char *what, int team) {
  for (int t = 0; t < nthr; t++)
    for (int r = 0; r < ROUNDS; r++) {
      int b = res[t].bad[r];
      if (b)
        FAIL("%s team %d round %d thread %d: copyprivate values differ from the single thread's (%s%s%s%s%s)", what,
             team, r, t, b & 1 ? "int " : "", b & 2 ? "double " : "", b & 4 ? "struct " : "", b & 8 ? "array " : "",
             b & 16 ? "winner" : "");
      if (res[t].winner[r] != res[0].winner[r])
        FAIL("%s team %d round %d: thread %d saw single thread %d, thread 0 saw %d", what, team, r, t,
             res[t].winner[r], res[0].winner[r]);
      if (res[t].winner[r] < 0 || res[t].winner[r] >= nthr)
        FAIL("%s team %d round %d: single thread %d out of range", what, team, r, res[t].winner[r]);
    }
  for (int t = nthr; t < MAXT; t++)
    if (res[t].nthr != -1) FAIL("%s team %d: slot %d written with %d threads", what, team, t, nthr);
}

static void clear(res_t *res, int n) {
  for (int t = 0; t < n; t++) {
    res[t].nthr = -1;
    for (int r = 0; r < ROUNDS; r++) res[t].winner[r] = -2, res[t].bad[r] = -1;
  }
}

int main(void) {
  static res_t res[TEAMS * MAXT];
  int nthr[TEAMS], nteams = -1, ondev = 0, gpu = 0;

  // (a) teams + parallel num_threads(64): every thread of both teams.
  clear(res, TEAMS * MAXT);
  for (int k = 0; k < TEAMS; k++) nthr[k] = -1;
#pragma omp target teams num_teams(TEAMS) thread_limit(64) map(tofrom: res[0:TEAMS * MAXT], nthr, nteams, ondev, gpu)
  {
    int team = omp_get_team_num();
    if (team == 0) {
      nteams = omp_get_num_teams();
      ondev = !omp_is_initial_device();
      gpu = 0; // host and device code must use the same variables (see tests/programs/README.md)
#if defined(__NVPTX__) || defined(__AMDGPU__) || defined(__AMDGCN__)
      gpu = 1;
#endif
    }
    int winner_seen = -1;
#pragma omp parallel num_threads(64) shared(winner_seen)
    {
      int t = omp_get_thread_num();
      if (t == 0 && team < TEAMS) nthr[team] = omp_get_num_threads();
      if (team < TEAMS && t < MAXT) res[team * MAXT + t].nthr = omp_get_num_threads();
      for (int r = 0; r < ROUNDS; r++) {
        if (team < TEAMS) round_body(r, team, res + team * MAXT, &winner_seen);
#pragma omp barrier
      }
    }
  }
  if (!ondev) FAIL("teams region ran on the host");
  if (nteams < 1 || nteams > TEAMS || (gpu && nteams != TEAMS)) FAIL("num_teams(%d) gave %d teams", TEAMS, nteams);
  for (int team = 0; team < nteams; team++) {
    int n = nthr[team];
    if (gpu ? n != 64 : (n < 1 || n > 64)) FAIL("teams: team %d parallel num_threads(64) got %d threads", team, n);
    check(res + team * MAXT, n, "teams num_threads(64)", team);
  }

  // (b) generic kernel: sequential code, then parallel num_threads(32), several rounds; the
  // sequential part also runs a single copyprivate in a one-thread region between rounds.
  clear(res, MAXT);
  int n32 = -1, seq_ok = 0;
#pragma omp target map(tofrom: res[0:MAXT], n32, seq_ok)
  {
    int winner_seen = -1;
    int base = omp_get_team_num(); // 0; keeps `team` a run-time value
    for (int r = 0; r < ROUNDS; r++) {
#pragma omp parallel num_threads(32) shared(winner_seen)
      {
        if (omp_get_thread_num() == 0) n32 = omp_get_num_threads();
        if (omp_get_thread_num() < MAXT) res[omp_get_thread_num()].nthr = omp_get_num_threads();
        round_body(r, base, res, &winner_seen);
      }
      // sequential part between regions: a single copyprivate in the initial thread alone
      int v = -1;
#pragma omp single copyprivate(v)
      v = 40 + r;
      if (v == 40 + r) seq_ok++;
    }
  }
  if (n32 != 32) FAIL("generic: parallel num_threads(32) got %d threads", n32);
  check(res, 32, "generic num_threads(32)", 0);
  if (seq_ok != ROUNDS) FAIL("generic: single copyprivate in the sequential part worked %d of %d times", seq_ok, ROUNDS);
  return 0;
}
