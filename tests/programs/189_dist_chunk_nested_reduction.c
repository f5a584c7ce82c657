// A chunked distribute loop whose body holds parallel reductions (issue 31): each row's sum
// comes from its own `parallel for reduction`, and a second variant runs two parallel regions
// per row. clang-22 makes these generic-SPMD kernels (schedule 91, one __kmpc_parallel_60 per
// row and region), so a runtime that counts one reduction region per distribute chunk and
// defers the reductions across chunks delivers every row's sum into a later row.
// On the CPU plugin libomp forms the teams; the ENV lines let it form them as asked.
// The virtual GPU's racecheck finds a hazard in clang-22's own code for the first kernel: after
// SPMDization (openmp-opt) thread 0 stores the row number into a team variable in a guarded
// block, every thread reads it after a barrier (`if (r == 0)`), and for r != 0 no barrier
// follows before thread 0 stores the next row number: a thread still before that read can see
// the next row's number. Harmless here (it only decides `r == 0`, which the next row never
// is), and compute-sanitizer would report it the same way.
// VGPU-RACE: Write-after-Read hazard in team 0
// ENV: KMP_TEAMS_THREAD_LIMIT=8192
// ENV: OMP_NUM_THREADS=8
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define ROWS 37
#define COLS 300

static long cell(int r, int c) { return (long)(r + 1) * 1000 + c % 17; }

int main(void) {
  static long row_sum[ROWS], row_sum2[ROWS], row_max[ROWS];
  long expect[ROWS], expect_max[ROWS];
  for (int r = 0; r < ROWS; r++) {
    expect[r] = 0;
    expect_max[r] = 0;
    for (int c = 0; c < COLS; c++) {
      expect[r] += cell(r, c);
      if (cell(r, c) * 3 > expect_max[r]) expect_max[r] = cell(r, c) * 3;
    }
  }
  int on_device = 0;
#pragma omp target teams distribute dist_schedule(static, 4) num_teams(3) thread_limit(64) \
    map(from: row_sum[0:ROWS]) map(tofrom: on_device)
  for (int r = 0; r < ROWS; r++) {
    long s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int c = 0; c < COLS; c++) s += (long)(r + 1) * 1000 + c % 17;
    row_sum[r] = s;
    if (r == 0) on_device = !omp_is_initial_device();
  }
  if (!on_device) FAIL("the region did not run on the device");
  for (int r = 0; r < ROWS; r++)
    if (row_sum[r] != expect[r]) FAIL("row %d: sum %ld, expected %ld", r, row_sum[r], expect[r]);

  // Two parallel regions per row, each with its own reduction.
#pragma omp target teams distribute dist_schedule(static, 3) num_teams(4) thread_limit(64) \
    map(from: row_sum2[0:ROWS], row_max[0:ROWS])
  for (int r = 0; r < ROWS; r++) {
    long s = 0, m = 0;
#pragma omp parallel for reduction(+ : s)
    for (int c = 0; c < COLS; c++) s += (long)(r + 1) * 1000 + c % 17;
#pragma omp parallel for reduction(max : m)
    for (int c = 0; c < COLS; c++) {
      long v = ((long)(r + 1) * 1000 + c % 17) * 3;
      if (v > m) m = v;
    }
    row_sum2[r] = s;
    row_max[r] = m;
  }
  for (int r = 0; r < ROWS; r++) {
    if (row_sum2[r] != expect[r]) FAIL("two regions, row %d: sum %ld, expected %ld", r, row_sum2[r], expect[r]);
    if (row_max[r] != expect_max[r]) FAIL("two regions, row %d: max %ld, expected %ld", r, row_max[r], expect_max[r]);
  }
  return 0;
}
