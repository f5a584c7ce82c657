// Global (declare target) arrays updated across many target regions with target update.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 256

float grid[N];
int steps;
#pragma omp declare target(grid, steps)

int main(void) {
  int offdev = 0;
  for (int i = 0; i < N; i++) grid[i] = (float)i;
  steps = 0;
#pragma omp target update to(grid, steps)
  for (int it = 0; it < 10; it++) {
#pragma omp target teams distribute parallel for
    for (int i = 0; i < N; i++) grid[i] += 1.0f;
#pragma omp target map(tofrom: offdev)
    {
      offdev |= omp_is_initial_device();
      steps++;
    }
    if (offdev) FAIL("target region ran on the host");
  }
  if (grid[3] != 3.0f || steps != 0) FAIL("host copies modified by device regions");
#pragma omp target update from(steps)
  if (steps != 10) FAIL("steps=%d", steps);
#pragma omp target update from(grid[0:N/2])
  for (int i = 0; i < N; i++) {
    float want = i < N / 2 ? i + 10.0f : (float)i;
    if (grid[i] != want) FAIL("grid[%d]=%g expected %g", i, grid[i], want);
  }
  // host edits the upper half and pushes only that half
  for (int i = N / 2; i < N; i++) grid[i] = -1.0f;
#pragma omp target update to(grid[N/2:N/2])
  double s = 0;
#pragma omp target map(tofrom: s)
  for (int i = 0; i < N; i++) s += grid[i];
  double want = 0;
  for (int i = 0; i < N / 2; i++) want += i + 10.0;
  want -= N / 2;
  if (s != want) FAIL("device grid sum=%g expected %g", s, want);
  return 0;
}
