// Device synchronization: single, master, masked, barrier.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define T 4

int main(void) {
  int singles = 0, masters = 0, masked_tid = -1, nthr = 0, ondev = 0;
  int phase_err = 0;
  int stage[T * 4];
  for (int i = 0; i < T * 4; i++) stage[i] = 0;
#pragma omp target parallel num_threads(T) map(tofrom: singles, masters, masked_tid, nthr, ondev, phase_err, stage)
  {
    int t = omp_get_thread_num();
#pragma omp single
    {
      singles++;
      nthr = omp_get_num_threads();
      ondev = !omp_is_initial_device();
    } // implicit barrier
#pragma omp master
    masters += 1 + t; // only thread 0
#pragma omp masked filter(1)
    masked_tid = t;   // only thread 1 (if it exists)
    stage[t] = 1;
#pragma omp barrier
    // after the barrier every thread must see all stage-1 writes
    for (int k = 0; k < nthr; k++)
      if (stage[k] != 1) {
#pragma omp atomic write
        phase_err = 1;
      }
#pragma omp barrier
    stage[nthr + t] = 2;
#pragma omp single nowait
    singles++;
  }
  if (!ondev) FAIL("region ran on host");
  if (singles != 2) FAIL("single executed %d times, expected 2", singles);
  if (masters != 1) FAIL("master executed wrong (masters=%d)", masters);
  if (nthr > 1 && masked_tid != 1) FAIL("masked filter(1) executed by thread %d", masked_tid);
  if (nthr == 1 && masked_tid != -1) FAIL("masked filter(1) ran with one thread");
  if (phase_err) FAIL("barrier did not order stage writes");
  for (int t = 0; t < nthr; t++)
    if (stage[nthr + t] != 2) FAIL("thread %d did not reach the end", t);
  // single with copyprivate
  int cp[T], nt = 0;
#pragma omp target parallel num_threads(T) map(from: cp) map(tofrom: nt)
  {
    int v = -1;
#pragma omp single copyprivate(v)
    { v = 77; nt = omp_get_num_threads(); }
    if (omp_get_thread_num() < T) cp[omp_get_thread_num()] = v;
  }
  if (nt < 1 || nt > T) FAIL("copyprivate region had %d threads", nt);
  for (int t = 0; t < nt; t++)
    if (cp[t] != 77) FAIL("copyprivate: thread %d got %d", t, cp[t]);
  return 0;
}
