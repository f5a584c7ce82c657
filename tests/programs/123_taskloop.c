// taskloop inside target regions: every iteration runs exactly once (counted per iteration).
// In a parallel region (inside single, so one thread generates the tasks and the team runs
// them): plain taskloop, grainsize(7), num_tasks(5), a negative stride, a signed range crossing
// zero (for (i = 10; i > -10; i -= 3)) and nogroup followed by taskwait. In a plain generic
// target region (no parallel: the encountering thread runs every task): the same kinds.
// taskloop reduction is in 123b_taskloop_reduction.c (it needs the task-reduction entry points).
// Loop bounds come from the host at run time, so nothing is folded.
// In the generic region the count array is named in shared clauses: there clang makes a mapped
// array that a taskloop references without one firstprivate to the tasks (the enclosing context
// is the target region, not a parallel region), so the updates would go to task-private copies.
// ENV: OMP_NUM_THREADS=8
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 200      // iterations of the ascending loops
#define NCASE 6    // counted cases per region
#define SLOTS 256  // count slots per case (indices shifted to be non-negative)

// Case numbers (count arrays are cnt[case][slot]).
enum { C_PLAIN, C_GRAIN, C_NTASKS, C_NEG, C_CROSS, C_NOGROUP };

int main(int argc, char **argv) {
  (void)argv;
  int n = N + (argc > 100), lo = 10 - (argc > 100), hi = -10; // run-time bounds
  // Locals, not statics: clang compiles a task nested in a target region to use a static local's
  // own (device global) copy, not the mapped one.
  int cnt_par[NCASE][SLOTS] = {{0}}, cnt_gen[NCASE][SLOTS] = {{0}};
  int ondev = 0, nthr = -1, single_runs = 0, executors = 0, gen_threads = -1;
  int after_plain = -1, after_grain = -1, after_ntasks = -1; // completed iterations seen right after
                                                             // each taskloop (implicit taskgroup)
  int gen_after[3] = {-1, -1, -1};

#pragma omp target map(tofrom: cnt_par, cnt_gen, ondev, nthr, single_runs, executors, \
                           gen_threads, after_plain, after_grain, after_ntasks, gen_after) firstprivate(n, lo, hi)
  {
    ondev = !omp_is_initial_device();
    int exec_mask[64] = {0}; // which threads ran taskloop tasks
#pragma omp parallel num_threads(8) shared(exec_mask)
    {
#pragma omp single
      {
        nthr = omp_get_num_threads();
        single_runs++;
        int done = 0;
#pragma omp taskloop shared(done)
        for (int i = 0; i < n; i++) {
#pragma omp atomic
          cnt_par[C_PLAIN][i]++;
#pragma omp atomic
          done++;
          int t = omp_get_thread_num();
          if (t >= 0 && t < 64) {
#pragma omp atomic write
            exec_mask[t] = 1;
          }
        }
#pragma omp atomic read
        after_plain = done;
        done = 0;
#pragma omp taskloop grainsize(7) shared(done)
        for (int i = 0; i < n; i++) {
#pragma omp atomic
          cnt_par[C_GRAIN][i]++;
#pragma omp atomic
          done++;
        }
#pragma omp atomic read
        after_grain = done;
        done = 0;
#pragma omp taskloop num_tasks(5) shared(done)
        for (int i = 3; i < n + 3; i++) {
#pragma omp atomic
          cnt_par[C_NTASKS][i - 3]++;
#pragma omp atomic
          done++;
        }
#pragma omp atomic read
        after_ntasks = done;
        // negative stride: n-1 down to 0 by -2 (odd n-1 first)
#pragma omp taskloop grainsize(3)
        for (int i = n - 1; i >= 0; i -= 2) {
#pragma omp atomic
          cnt_par[C_NEG][i]++;
        }
        // signed range crossing zero: 10, 7, ..., -8
#pragma omp taskloop num_tasks(4)
        for (int i = lo; i > hi; i -= 3) {
#pragma omp atomic
          cnt_par[C_CROSS][i + 128]++;
        }
        // nogroup: not waited for by the construct, but by the taskwait
#pragma omp taskloop nogroup grainsize(16)
        for (long i = 0; i < n; i++) {
#pragma omp atomic
          cnt_par[C_NOGROUP][i]++;
        }
#pragma omp taskwait
      }
    }
    for (int t = 0; t < 64; t++) executors += exec_mask[t];

    // plain generic region: the encountering (initial) thread generates and runs the tasks
    gen_threads = omp_get_num_threads();
    int done = 0;
#pragma omp taskloop shared(done, cnt_gen)
    for (int i = 0; i < n; i++) {
      cnt_gen[C_PLAIN][i]++;
      done++;
    }
    gen_after[0] = done;
    done = 0;
#pragma omp taskloop grainsize(7) shared(done, cnt_gen)
    for (int i = 0; i < n; i++) {
      cnt_gen[C_GRAIN][i]++;
      done++;
    }
    gen_after[1] = done;
    done = 0;
#pragma omp taskloop num_tasks(5) shared(done, cnt_gen)
    for (int i = n - 1; i >= 0; i--) {
      cnt_gen[C_NTASKS][i]++;
      done++;
    }
    gen_after[2] = done;
#pragma omp taskloop shared(cnt_gen)
    for (int i = n - 1; i >= 0; i -= 2)
      cnt_gen[C_NEG][i]++;
#pragma omp taskloop grainsize(2) shared(cnt_gen)
    for (int i = lo; i > hi; i -= 3)
      cnt_gen[C_CROSS][i + 128]++;
#pragma omp taskloop nogroup shared(cnt_gen)
    for (int i = 0; i < n; i++)
      cnt_gen[C_NOGROUP][i]++;
#pragma omp taskwait
  }
  if (!ondev) FAIL("target region ran on the host");
  if (single_runs != 1) FAIL("single block ran %d times", single_runs);
  if (nthr < 1 || nthr > 8) FAIL("parallel num_threads(8) gave %d threads", nthr);
  if (executors < 1 || executors > nthr) FAIL("%d threads ran tasks of a team of %d", executors, nthr);
  if (gen_threads != 1) FAIL("generic sequential part: omp_get_num_threads()=%d", gen_threads);
  static const char *names[NCASE] = {"taskloop", "taskloop grainsize(7)", "taskloop num_tasks(5)",
                                     "taskloop with negative stride", "taskloop over a range crossing zero",
                                     "taskloop nogroup + taskwait"};
  for (int pass = 0; pass < 2; pass++) {
    int (*cnt)[SLOTS] = pass ? cnt_gen : cnt_par;
    const char *where = pass ? "generic target region" : "parallel/single";
    for (int c = 0; c < NCASE; c++)
      for (int s = 0; s < SLOTS; s++) {
        int want;
        if (c == C_NEG) want = s < n && (s % 2) == (n - 1) % 2;
        else if (c == C_CROSS) want = s - 128 <= lo && s - 128 > hi && (lo - (s - 128)) % 3 == 0;
        else want = s < n;
        if (cnt[c][s] != want)
          FAIL("%s: %s: iteration %d ran %d times, expected %d", where, names[c], c == C_CROSS ? s - 128 : s,
               cnt[c][s], want);
      }
  }
  if (after_plain != n || after_grain != n || after_ntasks != n)
    FAIL("parallel/single: taskloop did not wait for its tasks (done %d/%d/%d of %d)", after_plain, after_grain,
         after_ntasks, n);
  for (int k = 0; k < 3; k++)
    if (gen_after[k] != n) FAIL("generic target region: taskloop %d did not wait for its tasks (%d of %d)", k, gen_after[k], n);
  return 0;
}
