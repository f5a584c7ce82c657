// Barrier memory ordering in parallel regions that use only part of a team: thread_limit(128)
// with parallel regions of 64, 20 (not a multiple of the warp size) and 96 threads, in a generic
// kernel and in a teams kernel. Many rounds of: write my slot of a team-local array (declared in
// the target region before the parallel region, so shared by its threads), barrier, read my
// neighbour's slot and check it holds this round's value; then a schedule(dynamic, 3) loop whose
// implicit barrier must publish every iteration's writes (each iteration exactly once) to all.
// Arrays are double-buffered by round parity, so one barrier per step is all that orders them.
// On the CPU plugin libomp caps the teams' parallel regions by nthreads-var and the teams thread
// limit; the ENV lines let it form full teams. Only there a smaller team is accepted.
// ENV: KMP_TEAMS_THREAD_LIMIT=256
// ENV: OMP_NUM_THREADS=96
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define ROUNDS 200 // on a GPU; a CPU device runs oversubscribed libomp threads, so fewer there
#define CPU_ROUNDS 20
#define MAXN 96
#define MAXM (3 * MAXN + 5)
#define NSIZES 3
#define TEAMS 2

// err[0]: mismatch count; err[1..5]: first mismatch (kind, size, round, expected, got)
#pragma omp declare target
static int val(int r, int t, int n) { return (r << 12) ^ (t << 4) ^ n; }
static int ival(int r, int i, int n) { return r * 1000 + i * 3 + n; }

static void report(int *err, int kind, int n, int r, int want, int got) {
  int old;
#pragma omp atomic capture
  old = err[0]++;
  if (old == 0) err[1] = kind, err[2] = n, err[3] = r, err[4] = want, err[5] = got;
}

// The body every thread of a region of n threads runs; buf/ibuf/cnt are shared by the region.
static void rounds(int n, int rounds_, int buf[2][MAXN], int ibuf[2][MAXM], int cnt[2][MAXM], int *err) {
  int t = omp_get_thread_num(), m = 3 * n + 5;
  if (omp_get_num_threads() != n) {
    if (t == 0) report(err, 0, n, -1, n, omp_get_num_threads());
    return;
  }
  for (int r = 0; r < rounds_; r++) {
    int p = r & 1;
    buf[p][t] = val(r, t, n);
#pragma omp barrier
    int nb = (t + 1) % n;
    int got = buf[p][nb];
    if (got != val(r, nb, n)) report(err, 1, n, r, val(r, nb, n), got);
#pragma omp for schedule(dynamic, 3)
    for (int i = 0; i < m; i++) {
      ibuf[p][i] = ival(r, i, n);
      cnt[p][i]++;
    }
    // implicit barrier: every iteration's writes must be visible to every thread
    for (int k = 0; k < 4; k++) {
      int i = (t * 7 + r * 13 + k * (m / 4 + 1)) % m;
      if (ibuf[p][i] != ival(r, i, n)) report(err, 2, n, r, ival(r, i, n), ibuf[p][i]);
      if (cnt[p][i] != r / 2 + 1) report(err, 3, n, r, r / 2 + 1, cnt[p][i]);
    }
  }
}
#pragma omp end declare target

static void check_err(const int *err, const char *what) {
  static const char *kinds[] = {"thread count", "neighbour slot after barrier", "dynamic loop value after its barrier",
                                "dynamic loop iteration count"};
  if (err[0])
    FAIL("%s: %d mismatches; first: %s, %d threads, round %d: expected %d, got %d", what, err[0],
         kinds[err[1] & 3], err[2], err[3], err[4], err[5]);
}

int main(void) {
  const int sizes[NSIZES] = {64, 20, 96};
  int err[6] = {0}, ondev = 0, gpu = 0, final_ok = 0;

  // Generic kernel, thread_limit(128): three parallel regions of different sizes in turn.
#pragma omp target thread_limit(128) map(to: sizes) map(tofrom: err, ondev, gpu, final_ok)
  {
    int buf[2][MAXN], ibuf[2][MAXM], cnt[2][MAXM];
    ondev = !omp_is_initial_device();
#if defined(__NVPTX__) || defined(__AMDGPU__) || defined(__AMDGCN__)
    gpu = 1;
#endif
    int nr = gpu ? ROUNDS : CPU_ROUNDS;
    for (int s = 0; s < NSIZES; s++) {
      int n = sizes[s];
      for (int i = 0; i < MAXM; i++) cnt[0][i] = cnt[1][i] = 0, ibuf[0][i] = ibuf[1][i] = -1;
      for (int i = 0; i < MAXN; i++) buf[0][i] = buf[1][i] = -1;
#pragma omp parallel num_threads(n)
      rounds(n, nr, buf, ibuf, cnt, err);
      // the initial thread must see the final state after the region's end
      int ok = 1, last = (nr - 1) & 1;
      for (int i = 0; i < 3 * n + 5; i++)
        if (cnt[last][i] != (nr - 1) / 2 + 1 || ibuf[last][i] != ival(nr - 1, i, n)) ok = 0;
      for (int t = 0; t < n; t++)
        if (buf[last][t] != val(nr - 1, t, n)) ok = 0;
      final_ok += ok;
    }
  }
  if (!ondev) FAIL("generic region ran on the host");
  check_err(err, "generic thread_limit(128)");
  if (final_ok != NSIZES) FAIL("generic: the initial thread saw the final state of %d of %d regions", final_ok, NSIZES);

  // Teams kernel: each team's region (of n threads, n from the host) uses team-local arrays.
  for (int s = 0; s < NSIZES; s++) {
    int n = sizes[s], nteams = -1, tsize[TEAMS] = {-1, -1};
    for (int k = 0; k < 6; k++) err[k] = 0;
#pragma omp target teams num_teams(TEAMS) thread_limit(128) map(tofrom: err, nteams, tsize) firstprivate(n)
    {
      int buf[2][MAXN], ibuf[2][MAXM], cnt[2][MAXM];
      int team = omp_get_team_num();
      if (team == 0) nteams = omp_get_num_teams();
      for (int i = 0; i < MAXM; i++) cnt[0][i] = cnt[1][i] = 0, ibuf[0][i] = ibuf[1][i] = -1;
      for (int i = 0; i < MAXN; i++) buf[0][i] = buf[1][i] = -1;
#pragma omp parallel num_threads(n)
      {
        int nt = omp_get_num_threads();
        if (omp_get_thread_num() == 0 && team < TEAMS) tsize[team] = nt;
        // a CPU device may give fewer threads (checked on the host): run the rounds on those
        rounds(gpu ? n : nt, gpu ? ROUNDS : CPU_ROUNDS, buf, ibuf, cnt, err);
      }
    }
    if (nteams < 1 || nteams > TEAMS || (gpu && nteams != TEAMS)) FAIL("num_teams(%d) gave %d teams", TEAMS, nteams);
    for (int k = 0; k < nteams; k++)
      if (gpu ? tsize[k] != n : (tsize[k] < 1 || tsize[k] > n))
        FAIL("teams thread_limit(128): team %d parallel num_threads(%d) got %d threads", k, n, tsize[k]);
    check_err(err, "teams thread_limit(128)");
  }
  return 0;
}
