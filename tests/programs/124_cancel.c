// cancel / cancellation point inside target regions with cancellation disabled (OMP_CANCELLATION
// not set, so cancel-var is false): omp_get_cancellation() is 0 on the device, the cancel
// directives are no-ops and every region runs to completion. Checks cancel parallel (every
// thread passes it and the following barrier and cancellation point), cancel for in a worksharing
// loop (static and dynamic schedules, and in target teams distribute parallel for), cancel
// sections, and cancel taskgroup from one task of a taskgroup (every task still runs); every
// iteration, section and task runs exactly once, including the code after the cancel directive.
// (If the environment sets OMP_CANCELLATION=true the program reports it instead.)
// On the CPU plugin libomp runs the teams construct; the ENV lines let it form the teams (and
// keep it from warning that it cannot).
// ENV: KMP_TEAMS_THREAD_LIMIT=256
// ENV: OMP_NUM_THREADS=16
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define NT 16
#define N 300
#define NTASK 40
#define TEAMS 3

int main(int argc, char **argv) {
  (void)argv;
  int n = N + (argc > 100), stop = 17 + (argc > 100); // run-time values
  // Locals, not statics: clang compiles a task nested in a target region to use a static local's
  // own (device global) copy, not the mapped one.
  int par_before[NT] = {0}, par_after[NT] = {0}, par_end[NT] = {0};
  int cnt_static[N + 1] = {0}, cnt_dyn[N + 1] = {0}, after_static[N + 1] = {0}, after_dyn[N + 1] = {0};
  int cnt_sec[4] = {0}, cnt_task[NTASK] = {0}, after_task[NTASK] = {0}, cnt_dpf[N + 1] = {0}, after_dpf[N + 1] = {0};
  int ondev = 0, dev_cancel = -1, par_cancel = -1, nthr = -1, tg_done = -1, ondev2 = 0, dev_cancel2 = -1;

#pragma omp target map(tofrom: par_before, par_after, par_end, cnt_static, cnt_dyn, after_static, after_dyn, \
                           cnt_sec, cnt_task, after_task, ondev, dev_cancel, par_cancel, nthr, tg_done) \
    firstprivate(n, stop)
  {
    ondev = !omp_is_initial_device();
    dev_cancel = omp_get_cancellation();
#pragma omp parallel num_threads(NT)
    {
      int t = omp_get_thread_num();
      if (t == 0) {
        nthr = omp_get_num_threads();
        par_cancel = omp_get_cancellation();
      }
      // cancel parallel from one thread (a no-op): every thread continues
      if (t < NT) par_before[t]++;
#pragma omp cancel parallel if (t == 1)
      if (t < NT) par_after[t]++;
#pragma omp barrier
#pragma omp cancellation point parallel

      // cancel for at one iteration, static schedule
#pragma omp for schedule(static)
      for (int i = 0; i < n; i++) {
#pragma omp atomic
        cnt_static[i]++;
        if (i == stop) {
#pragma omp cancel for
        }
#pragma omp cancellation point for
#pragma omp atomic
        after_static[i]++;
      }
      // cancel for with a condition clause, dynamic schedule
#pragma omp for schedule(dynamic, 3)
      for (int i = 0; i < n; i++) {
#pragma omp atomic
        cnt_dyn[i]++;
#pragma omp cancel for if (i % 50 == 7)
#pragma omp atomic
        after_dyn[i]++;
      }
      // cancel sections
#pragma omp sections
      {
#pragma omp section
        {
#pragma omp atomic
          cnt_sec[0]++;
#pragma omp cancel sections
#pragma omp atomic
          cnt_sec[0] += 10;
        }
#pragma omp section
        {
#pragma omp cancellation point sections
#pragma omp atomic
          cnt_sec[1]++;
        }
#pragma omp section
        {
#pragma omp atomic
          cnt_sec[2]++;
        }
      }
      // cancel taskgroup from one task: the other tasks still run, and so does its own tail
#pragma omp single
      {
#pragma omp taskgroup
        {
          for (int k = 0; k < NTASK; k++) {
#pragma omp task firstprivate(k)
            {
#pragma omp atomic
              cnt_task[k]++;
              if (k == 5) {
#pragma omp cancel taskgroup
              }
#pragma omp cancellation point taskgroup
#pragma omp atomic
              after_task[k]++;
            }
          }
        }
        int d = 0;
        for (int k = 0; k < NTASK; k++) d += after_task[k];
        tg_done = d; // the taskgroup waited for every task
      }
#pragma omp cancellation point parallel
      if (t < NT) par_end[t]++;
    }
  }

  // SPMD-style kernel: cancel for in a combined distribute parallel for
#pragma omp target teams distribute parallel for num_teams(TEAMS) thread_limit(32) \
    map(tofrom: cnt_dpf, after_dpf, ondev2, dev_cancel2) firstprivate(stop)
  for (int i = 0; i < n; i++) {
    if (i == 0) {
      ondev2 = !omp_is_initial_device();
      dev_cancel2 = omp_get_cancellation();
    }
#pragma omp atomic
    cnt_dpf[i]++;
#pragma omp cancel for if (i == stop || i == n - 1)
#pragma omp atomic
    after_dpf[i]++;
  }

  if (!ondev || !ondev2) FAIL("target region ran on the host");
  if (dev_cancel != 0 || par_cancel != 0 || dev_cancel2 != 0)
    FAIL("omp_get_cancellation() on the device %d/%d/%d, expected 0 (is OMP_CANCELLATION set?)", dev_cancel,
         par_cancel, dev_cancel2);
  if (nthr < 1 || nthr > NT) FAIL("parallel num_threads(%d) gave %d threads", NT, nthr);
  for (int t = 0; t < NT; t++) {
    int want = t < nthr;
    if (par_before[t] != want || par_after[t] != want || par_end[t] != want)
      FAIL("thread %d: before/after cancel parallel/end %d/%d/%d, expected %d each", t, par_before[t], par_after[t],
           par_end[t], want);
  }
  for (int i = 0; i <= N; i++) {
    int want = i < n;
    if (cnt_static[i] != want || after_static[i] != want)
      FAIL("cancel for (static): iteration %d ran %d times, its tail %d times, expected %d", i, cnt_static[i],
           after_static[i], want);
    if (cnt_dyn[i] != want || after_dyn[i] != want)
      FAIL("cancel for (dynamic): iteration %d ran %d times, its tail %d times, expected %d", i, cnt_dyn[i],
           after_dyn[i], want);
    if (cnt_dpf[i] != want || after_dpf[i] != want)
      FAIL("cancel for (teams distribute parallel for): iteration %d ran %d times, its tail %d times, expected %d", i,
           cnt_dpf[i], after_dpf[i], want);
  }
  if (cnt_sec[0] != 11 || cnt_sec[1] != 1 || cnt_sec[2] != 1 || cnt_sec[3] != 0)
    FAIL("cancel sections: sections ran %d/%d/%d/%d, expected 11/1/1/0", cnt_sec[0], cnt_sec[1], cnt_sec[2], cnt_sec[3]);
  for (int k = 0; k < NTASK; k++)
    if (cnt_task[k] != 1 || after_task[k] != 1)
      FAIL("cancel taskgroup: task %d ran %d times, its tail %d times, expected 1", k, cnt_task[k], after_task[k]);
  if (tg_done != NTASK) FAIL("cancel taskgroup: %d tasks had finished when the taskgroup ended, expected %d", tg_done, NTASK);
  return 0;
}
