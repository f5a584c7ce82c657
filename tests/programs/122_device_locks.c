// OpenMP lock routines inside target regions. A simple lock declared in a target teams region
// (one per team, shared by the team's parallel region) protects a non-atomic read-modify-write
// of a counter by every thread of target teams num_teams(2) thread_limit(64) + parallel, many
// increments each: the count must be exact. omp_test_lock on a lock held by another thread
// returns 0, on a free lock non-zero (threads hand a held lock over through barriers, never by
// spinning on each other). The nest-lock family: the owner sets it twice, omp_test_nest_lock by
// the owner returns the new nesting count (3), by another thread 0; once it is fully unset,
// another thread gets it (count 1). Also one nest lock shared by all threads of the team
// protecting a counter, each thread taking it nested twice. Locks are destroyed and reused.
// (The contended loops have every lane of a warp spin in omp_set_lock at once: fine with
// independent thread scheduling, as on sm_70 and later; lanes of an AMD wavefront cannot each
// hold a spin lock while the others spin.)
// On the CPU plugin libomp caps the teams' parallel regions by nthreads-var and the teams thread
// limit; the ENV lines let it form full teams. Only there a smaller team is accepted.
// ENV: KMP_TEAMS_THREAD_LIMIT=256
// ENV: OMP_NUM_THREADS=64
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define TEAMS 2
#define NT 64
#define ITERS 100

// Per team: threads in the parallel region, the locked counter, the nest-locked counter, error
// bits, what omp_test_* returned where an exact value is known.
typedef struct {
  int nthr, count, ncount, bits, test_held_other, test_free, nest_test_owner,
      nest_test_other, nest_after, ran;
} team_res_t;

int main(int argc, char **argv) {
  (void)argv;
  int iters = ITERS + (argc > 100); // not a compile-time constant
  static team_res_t res[TEAMS];
  int ondev = 0, gpu = 0, nteams = -1;
  for (int k = 0; k < TEAMS; k++)
    res[k] = (team_res_t){-1, -1, -1, -1, -1, -1, -1, -1, -1, 0};

#pragma omp target teams num_teams(TEAMS) thread_limit(NT) map(tofrom: res, ondev, gpu, nteams) firstprivate(iters)
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
    omp_lock_t lock;         // one per team, shared by the parallel region below
    omp_nest_lock_t nlock;
    omp_init_lock(&lock);
    omp_init_nest_lock(&nlock);
    int count = 0, ncount = 0, nthr = -1, bits = 0;
    int test_held_other = -1, test_free = -1;
    int nest_test_owner = -1, nest_test_other = -1, nest_after = -1;
#pragma omp parallel num_threads(NT) shared(lock, nlock, count, ncount, nthr, bits, test_held_other, \
                                             test_free, nest_test_owner, nest_test_other, nest_after)
    {
      int t = omp_get_thread_num();
      if (t == 0) nthr = omp_get_num_threads();
      // 1. simple lock protecting a plain read-modify-write (all threads start together)
#pragma omp barrier
      for (int i = 0; i < iters; i++) {
        omp_set_lock(&lock);
        int v = count;
        // a dependent delay between the read and the write, so a race loses updates
        for (volatile int d = 0; d < 150 + (t & 3); d++) ;
        count = v + 1;
        omp_unset_lock(&lock);
      }
#pragma omp barrier
      // 2. omp_test_lock: on a free lock it succeeds; on a lock held by another thread it returns
      // 0. (By the owner of a held simple lock it is unspecified, so not tried.) Thread 0 holds
      // the lock across a barrier while thread 1 tests it: no thread spins on another.
      if (t == 0) test_free = omp_test_lock(&lock); // free: non-zero, now held by thread 0
#pragma omp barrier
      if (t == 1) {
        test_held_other = omp_test_lock(&lock);  // held by thread 0: 0
        if (test_held_other) omp_unset_lock(&lock);
      }
#pragma omp barrier
      if (t == 0 && test_free) omp_unset_lock(&lock);
      // 3. nest lock: the owner nests it twice, omp_test_nest_lock by the owner returns the new
      // nesting count (3), by another thread 0; once fully unset, another thread gets count 1
      if (t == 0) {
        omp_set_nest_lock(&nlock);
        omp_set_nest_lock(&nlock);                    // nesting count 2
        nest_test_owner = omp_test_nest_lock(&nlock); // 3
      }
#pragma omp barrier
      if (t == 1) {
        nest_test_other = omp_test_nest_lock(&nlock); // owned by thread 0: 0
        if (nest_test_other > 0) omp_unset_nest_lock(&nlock);
      }
#pragma omp barrier
      if (t == 0) {
        omp_unset_nest_lock(&nlock);
        omp_unset_nest_lock(&nlock);
        if (nest_test_owner > 0) omp_unset_nest_lock(&nlock); // fully released now
      }
#pragma omp barrier
      if (t == 1) {
        nest_after = omp_test_nest_lock(&nlock); // free again: this thread gets it, count 1
        if (nest_after > 0) omp_unset_nest_lock(&nlock);
      }
#pragma omp barrier
      // 4. nest lock shared by everyone, each thread taking it twice, counter updated under both
      for (int i = 0; i < iters / 4; i++) {
        omp_set_nest_lock(&nlock);
        int v = ncount;
        omp_set_nest_lock(&nlock);
        for (volatile int d = 0; d < 20 + (t & 1); d++) ;
        ncount = v + 1;
        omp_unset_nest_lock(&nlock);
        v = ncount;
        for (volatile int d = 0; d < 20 + (t & 1); d++) ;
        ncount = v + 2;
        omp_unset_nest_lock(&nlock);
      }
    }
    omp_destroy_lock(&lock);
    omp_destroy_nest_lock(&nlock);
    // the destroyed locks can be initialized and used again (sequential part)
    omp_init_lock(&lock);
    if (!omp_test_lock(&lock)) bits |= 1;
    omp_unset_lock(&lock);
    omp_destroy_lock(&lock);
    omp_init_nest_lock(&nlock);
    if (omp_test_nest_lock(&nlock) != 1) bits |= 2;
    if (omp_test_nest_lock(&nlock) != 2) bits |= 4;
    omp_unset_nest_lock(&nlock);
    omp_unset_nest_lock(&nlock);
    omp_destroy_nest_lock(&nlock);
    if (team < TEAMS) {
      res[team] = (team_res_t){nthr, count, ncount, bits, test_held_other, test_free,
                               nest_test_owner, nest_test_other, nest_after, 1};
    }
  }
  if (!ondev) FAIL("teams region ran on the host");
  if (nteams < 1 || nteams > TEAMS || (gpu && nteams != TEAMS)) FAIL("num_teams(%d) gave %d teams", TEAMS, nteams);
  for (int k = 0; k < TEAMS; k++) {
    team_res_t *r = &res[k];
    if (k >= nteams) {
      if (r->ran) FAIL("team %d ran but there are %d teams", k, nteams);
      continue;
    }
    if (!r->ran) FAIL("team %d did not record its results", k);
    int n = r->nthr;
    // A generic kernel's thread_limit(NT) includes the main thread's warp (the kernel is built
    // for at most NT threads, as LLVM's plugin launches it): on a GPU the region gets NT or
    // NT - 32 threads.
    if (gpu ? (n != NT && n != NT - 32) : (n < 1 || n > NT)) FAIL("team %d: parallel num_threads(%d) got %d threads", k, NT, n);
    if (r->count != n * iters)
      FAIL("team %d: lock-protected counter %d, expected %d (%d threads x %d)", k, r->count, n * iters, n, iters);
    if (r->ncount != n * (iters / 4) * 3)
      FAIL("team %d: nest-lock-protected counter %d, expected %d", k, r->ncount, n * (iters / 4) * 3);
    if (r->test_free == 0) FAIL("team %d: omp_test_lock on a free lock returned 0", k);
    if (n > 1 && r->test_held_other != 0)
      FAIL("team %d: omp_test_lock on a lock held by another thread returned %d, expected 0", k, r->test_held_other);
    if (r->nest_test_owner != 3)
      FAIL("team %d: omp_test_nest_lock by the owner (nested twice) returned %d, expected 3", k, r->nest_test_owner);
    if (n > 1 && r->nest_test_other != 0)
      FAIL("team %d: omp_test_nest_lock on a nest lock owned by another thread returned %d, expected 0", k, r->nest_test_other);
    if (n > 1 && r->nest_after != 1)
      FAIL("team %d: omp_test_nest_lock after the owner released it returned %d, expected 1", k, r->nest_after);
    if (r->bits & 1) FAIL("team %d: omp_test_lock on a re-initialized lock failed", k);
    if (r->bits & 6) FAIL("team %d: omp_test_nest_lock on a re-initialized nest lock did not return 1 then 2", k);
  }
  return 0;
}
