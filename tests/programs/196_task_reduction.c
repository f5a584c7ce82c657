// Task reductions inside target regions: `target parallel reduction(task, +: x)` whose threads
// create tasks with `in_reduction(+: x)` (each task's contribution goes through the task
// reduction the parallel region's reduction(task) opened, the threads' own updates through the
// plain reduction), and a `taskgroup task_reduction(+: y) task_reduction(max: m)` with
// `task in_reduction` tasks inside a target region. A task reduction's contributions that are
// lost, or added into the original item as well as into the reduction, show as a wrong sum.
// Then `reduction(task, ...)` on worksharing loops: `target parallel for`, and `parallel for`
// inside each team of `target teams`. Not the combined `target teams distribute parallel for
// reduction(task, ...)`: clang-22 accepts it but also opens the task reduction on the teams
// level (its teams-outlined function calls __kmpc_taskred_modifier_init), and LLVM 22's libomp
// then aborts (kmp_alloc.cpp: "addr_aligned % 64 == 0"), on the host alone too, with either
// offload library.
// On the CPU plugin libomp forms the teams; the ENV lines let it form them as asked.
// ENV: KMP_TEAMS_THREAD_LIMIT=8192
// ENV: OMP_NUM_THREADS=8
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define TASKS 40
#define ITERS 1000
#define TEAMS 3

int main(void) {
  int on_device = 0;
  long x = 5;
  int threads = 0;
  // Every thread adds 1000 + its number plainly; one thread makes TASKS tasks, task k adding k.
#pragma omp target parallel num_threads(8) reduction(task, + : x) map(tofrom: on_device, threads)
  {
    int t = omp_get_thread_num();
    x += 1000 + t;
#pragma omp single
    {
      threads = omp_get_num_threads();
      on_device = !omp_is_initial_device();
      for (int k = 1; k <= TASKS; k++) {
#pragma omp task in_reduction(+ : x) firstprivate(k)
        x += k;
      }
    }
  }
  if (!on_device) FAIL("target parallel: the region did not run on the device");
  long want = 5 + (long)threads * 1000 + (long)threads * (threads - 1) / 2 + TASKS * (TASKS + 1) / 2;
  if (threads < 1 || x != want) FAIL("target parallel reduction(task): x = %ld, expected %ld (%d threads)", x, want, threads);

  // A taskgroup's task reduction inside a target region (tasks made by one thread of a team).
  long y = 7, m = -1;
  on_device = 0;
#pragma omp target map(tofrom: y, m, on_device)
  {
    on_device = !omp_is_initial_device();
#pragma omp parallel num_threads(4)
#pragma omp single
#pragma omp taskgroup task_reduction(+ : y) task_reduction(max : m)
    {
      for (int k = 0; k < TASKS; k++) {
#pragma omp task in_reduction(+ : y) in_reduction(max : m) firstprivate(k)
        {
          long s = 0;
          for (int i = 0; i < ITERS; i++) s += (i * (k + 1)) % 7;
          y += s;
          long v = (k * 37) % TASKS;
          if (v > m) m = v;
        }
      }
    }
  }
  if (!on_device) FAIL("taskgroup: the region did not run on the device");
  long want_y = 7;
  for (int k = 0; k < TASKS; k++)
    for (int i = 0; i < ITERS; i++) want_y += (i * (k + 1)) % 7;
  if (y != want_y) FAIL("taskgroup task_reduction(+): y = %ld, expected %ld", y, want_y);
  if (m != TASKS - 1) FAIL("taskgroup task_reduction(max): m = %ld, expected %d", m, TASKS - 1);

  // reduction(task) on a worksharing loop: each iteration adds i plainly and makes a task
  // adding 1 through the task reduction. Once as `target parallel for`, once in each team of a
  // `target teams` region (a `parallel for` nested in the teams region, each team its own sum).
  long z = 0;
#pragma omp target parallel for num_threads(8) reduction(task, + : z)
  for (int i = 0; i < ITERS; i++) {
    z += i;
#pragma omp task in_reduction(+ : z)
    z += 1;
  }
  long want_z = (long)ITERS * (ITERS - 1) / 2 + ITERS;
  if (z != want_z) FAIL("target parallel for reduction(task): z = %ld, expected %ld", z, want_z);

  long per_team[TEAMS];
  int teams = 0;
  on_device = 0;
  for (int t = 0; t < TEAMS; t++) per_team[t] = -1;
#pragma omp target teams num_teams(TEAMS) thread_limit(8) map(tofrom: per_team, teams, on_device)
  {
    long zt = omp_get_team_num();
#pragma omp parallel for reduction(task, + : zt)
    for (int i = 0; i < ITERS; i++) {
      zt += i;
#pragma omp task in_reduction(+ : zt)
      zt += 1;
    }
    per_team[omp_get_team_num()] = zt;
    if (omp_get_team_num() == 0) {
      teams = omp_get_num_teams();
      on_device = !omp_is_initial_device();
    }
  }
  if (!on_device) FAIL("target teams: the region did not run on the device");
  if (teams < 1 || teams > TEAMS) FAIL("target teams: %d teams, asked for %d", teams, TEAMS);
  for (int t = 0; t < teams; t++)
    if (per_team[t] != want_z + t)
      FAIL("team %d: parallel for reduction(task): %ld, expected %ld", t, per_team[t], want_z + t);
  return 0;
}
