// Named critical constructs with hint clauses inside target regions: in target teams
// num_teams(2) thread_limit(64) + parallel, critical(name) hint(omp_sync_hint_contended)
// protects a non-atomic read-modify-write of the team's counter (many increments per thread: the
// count must be exact), a differently named critical hint(omp_sync_hint_uncontended) is nested
// inside it, and a third name with hint(omp_sync_hint_speculative) protects another counter.
// (A critical region's binding thread set is the contention group, i.e. one team, so the
// counters are per team.) Then the error directive at(execution) severity(warning) in the
// sequential part of a target region and from one thread of a parallel region: a warning must
// not stop the program; the code after it runs. The runtime may display the message: the
// program prints nothing itself, but libomp on the CPU plugin writes
// "OMP: Warning #...: ... 130 device warning ..." lines to stderr, and GPUs print the message.
// EXPECT-STDERR: 130 device warning
// ENV: KMP_TEAMS_THREAD_LIMIT=256
// ENV: OMP_NUM_THREADS=64
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define TEAMS 2
#define NT 64
#define ITERS 100

typedef struct { int nthr, count, inner, spec, ran; } team_res_t;

int main(int argc, char **argv) {
  (void)argv;
  int iters = ITERS + (argc > 100);
  team_res_t res[TEAMS];
  for (int k = 0; k < TEAMS; k++) res[k] = (team_res_t){-1, -1, -1, -1, 0};
  int ondev = 0, gpu = 0, nteams = -1;

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
    int count = 0, inner = 0, spec = 0, nthr = -1;
#pragma omp parallel num_threads(NT) shared(count, inner, spec, nthr)
    {
      int t = omp_get_thread_num();
      if (t == 0) nthr = omp_get_num_threads();
      for (int i = 0; i < iters; i++) {
#pragma omp critical(c130_outer) hint(omp_sync_hint_contended)
        {
          int v = count;
          for (volatile int d = 0; d < 30 + (t & 3); d++) ; // widen the race window
          count = v + 1;
          if (i % 4 == 0) {
#pragma omp critical(c130_inner) hint(omp_sync_hint_uncontended)
            {
              int u = inner;
              for (volatile int d = 0; d < 5; d++) ;
              inner = u + 2;
            }
          }
        }
#pragma omp critical(c130_spec) hint(omp_sync_hint_speculative)
        {
          int s = spec;
          for (volatile int d = 0; d < 10; d++) ;
          spec = s + 3;
        }
      }
    }
    if (team < TEAMS) res[team] = (team_res_t){nthr, count, inner, spec, 1};
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
    if (gpu ? n != NT : (n < 1 || n > NT)) FAIL("team %d: parallel num_threads(%d) got %d threads", k, NT, n);
    if (r->count != n * iters)
      FAIL("team %d: critical(c130_outer) hint(contended) counter %d, expected %d", k, r->count, n * iters);
    int inner_want = n * ((iters + 3) / 4) * 2;
    if (r->inner != inner_want)
      FAIL("team %d: nested critical(c130_inner) hint(uncontended) counter %d, expected %d", k, r->inner, inner_want);
    if (r->spec != n * iters * 3)
      FAIL("team %d: critical(c130_spec) hint(speculative) counter %d, expected %d", k, r->spec, n * iters * 3);
  }

  // error directive, severity(warning): execution continues
  int before = 0, after = 0, par_after = 0, ondev2 = 0;
#pragma omp target map(tofrom: before, after, par_after, ondev2)
  {
    ondev2 = !omp_is_initial_device();
    before = 1;
#pragma omp error at(execution) severity(warning) message("130 device warning (sequential part), expected")
    after = 1;
#pragma omp parallel num_threads(4) shared(par_after)
    {
      if (omp_get_thread_num() == 0) {
#pragma omp error at(execution) severity(warning) message("130 device warning (parallel region), expected")
      }
#pragma omp atomic
      par_after++;
    }
  }
  if (!ondev2) FAIL("error-directive region ran on the host");
  if (before != 1 || after != 1) FAIL("error directive severity(warning) stopped the region (before %d after %d)", before, after);
  if (par_after < 1 || par_after > 4) FAIL("parallel region after the warning: %d threads counted", par_after);
  return 0;
}
