// Dynamic-schedule state must be per thread (per parallel region), not per team: in target
// teams num_teams(2) thread_limit(64) + parallel num_threads(16), every thread runs its own
// nested parallel for schedule(dynamic, 1) and schedule(guided) (serialized on GPUs: one thread
// each), all at the same time, with a different trip count per thread; each must see every one
// of its iterations exactly once (in order when its nested region has one thread). Then an
// outer schedule(dynamic, 2) loop whose body runs a nested dynamic loop: the outer loop's
// dispatch must survive the nested ones (every outer iteration exactly once, per team).
// On the CPU plugin libomp caps the teams' parallel regions by nthreads-var and the teams thread
// limit; the ENV lines let it form full teams. Only there a smaller team is accepted.
// ENV: KMP_TEAMS_THREAD_LIMIT=256
// ENV: OMP_NUM_THREADS=16
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define TEAMS 2
#define NT 16
#define BASE 100 // thread t's nested loops run BASE + 3 * t iterations
#define MAXI (BASE + 3 * NT)
#define OUTER 77
#define REPS 3

// Per team and thread: error bits (4 per loop kind), the first bad nested iteration and its
// count, what the nested region saw.
typedef struct { int bits, bad_iter, bad_count, level, ancestor, inner_n; } res_t;

#pragma omp declare target
// A nested loop of n iterations with the given schedule kind (0 dynamic,1; 1 guided; 2 dynamic,2
// over a shifted range), counted into cnt (private to the calling thread, shared in the nested
// region). Returns error bits: 1 lost/duplicated iteration, 2 out of order with one thread.
static int nested(int kind, int n, int *cnt, int *order, res_t *res) {
  int bits = 0;
  for (int i = 0; i < MAXI; i++) cnt[i] = 0;
  int pos = 0, inner_n = -1;
  if (kind == 0) {
#pragma omp parallel for schedule(dynamic, 1) shared(cnt, order, pos, inner_n)
    for (int i = 0; i < n; i++) {
#pragma omp atomic
      cnt[i]++;
      int p;
#pragma omp atomic capture
      p = pos++;
      if (p < MAXI) order[p] = i;
      if (i == 0) {
        inner_n = omp_get_num_threads();
        res->level = omp_get_level();
        res->ancestor = omp_get_ancestor_thread_num(1);
      }
    }
  } else if (kind == 1) {
#pragma omp parallel for schedule(guided) shared(cnt, order, pos, inner_n)
    for (int i = 0; i < n; i++) {
#pragma omp atomic
      cnt[i]++;
      int p;
#pragma omp atomic capture
      p = pos++;
      if (p < MAXI) order[p] = i;
      if (i == 0) inner_n = omp_get_num_threads();
    }
  } else {
#pragma omp parallel for schedule(dynamic, 2) shared(cnt, order, pos, inner_n)
    for (int i = 5; i < n + 5; i++) {
#pragma omp atomic
      cnt[i - 5]++;
      int p;
#pragma omp atomic capture
      p = pos++;
      if (p < MAXI) order[p] = i - 5;
      if (i == 5) inner_n = omp_get_num_threads();
    }
  }
  for (int i = 0; i < MAXI; i++)
    if (cnt[i] != (i < n)) {
      bits |= 1;
      if (res->bad_iter < 0) res->bad_iter = i, res->bad_count = cnt[i];
      break;
    }
  if (inner_n == 1)
    for (int p = 0; p < n; p++)
      if (order[p] != p) { bits |= 2; break; }
  if (inner_n < 1) bits |= 4;
  res->inner_n = inner_n;
  return bits;
}
#pragma omp end declare target

int main(void) {
  static res_t res[TEAMS][NT];
  int outer_cnt[TEAMS][OUTER], tsize[TEAMS] = {-1, -1}, nteams = -1, ondev = 0, gpu = 0;
  for (int k = 0; k < TEAMS; k++) {
    for (int i = 0; i < OUTER; i++) outer_cnt[k][i] = 0;
    for (int t = 0; t < NT; t++) res[k][t] = (res_t){-1, -1, -1, -1, -1, -1};
  }
#pragma omp target teams num_teams(TEAMS) thread_limit(64) map(tofrom: res, outer_cnt, tsize, nteams, ondev, gpu)
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
#pragma omp parallel num_threads(NT)
    {
      int t = omp_get_thread_num();
      int cnt[MAXI], order[MAXI];
      res_t *me = team < TEAMS && t < NT ? &res[team][t] : 0;
      if (me) {
        me->bits = 0;
        if (t == 0) tsize[team] = omp_get_num_threads();
        for (int rep = 0; rep < REPS; rep++) {
          int n = BASE + 3 * t - rep; // differs per thread and per repetition
          me->bits |= nested(0, n, cnt, order, me);
          me->bits |= nested(1, n, cnt, order, me) << 4;
          me->bits |= nested(2, n, cnt, order, me) << 8;
        }
      }
      // outer dynamic loop over the team's threads, each iteration running a nested one
#pragma omp for schedule(dynamic, 2)
      for (int i = 0; i < OUTER; i++) {
        if (team < TEAMS) outer_cnt[team][i]++;
        if (me) me->bits |= nested(0, 10 + i % 7, cnt, order, me) << 12;
      }
    }
  }
  if (!ondev) FAIL("teams region ran on the host");
  if (nteams < 1 || nteams > TEAMS || (gpu && nteams != TEAMS)) FAIL("num_teams(%d) gave %d teams", TEAMS, nteams);
  for (int k = 0; k < nteams; k++) {
    int n = tsize[k];
    if (gpu ? n != NT : (n < 1 || n > NT)) FAIL("team %d: parallel num_threads(%d) got %d threads", k, NT, n);
    for (int i = 0; i < OUTER; i++)
      if (outer_cnt[k][i] != 1)
        FAIL("team %d: outer dynamic iteration %d ran %d times (nested dynamic loops disturbed it)", k, i,
             outer_cnt[k][i]);
    for (int t = 0; t < NT; t++) {
      res_t *r = &res[k][t];
      if (t >= n) {
        if (r->bits != -1) FAIL("team %d: thread %d ran but the team has %d threads", k, t, n);
        continue;
      }
      if (r->bits) {
        static const char *loops[] = {"dynamic,1", "guided", "dynamic,2", "dynamic,1 inside the outer dynamic loop"};
        int l = 0;
        while (!((r->bits >> (4 * l)) & 0xf)) l++;
        int b = (r->bits >> (4 * l)) & 0xf;
        if (b & 1)
          FAIL("team %d thread %d: nested %s loop: iteration %d ran %d times (first bad one)", k, t, loops[l],
               r->bad_iter, r->bad_count);
        FAIL("team %d thread %d: nested %s loop: %s", k, t, loops[l],
             b & 2 ? "iterations out of order on one thread" : "no thread count recorded");
      }
      if (r->level != 2) FAIL("team %d thread %d: omp_get_level() in nested region %d, expected 2", k, t, r->level);
      if (r->ancestor != t)
        FAIL("team %d thread %d: omp_get_ancestor_thread_num(1) in nested region %d", k, t, r->ancestor);
    }
  }
  return 0;
}
