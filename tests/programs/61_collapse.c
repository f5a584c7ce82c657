// collapse(2) and collapse(3) on the device, including non-rectangular-free odd bounds.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define NI 37
#define NJ 19
#define NK 5

int main(void) {
  int offdev = 0;
  static int m[NI][NJ], c3[NI][NJ][NK];
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++) m[i][j] = 0;
#pragma omp target teams distribute parallel for collapse(2) map(tofrom: m) map(tofrom: offdev)
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++) m[i][j] += i * 1000 + j + 1 + 1000000 * omp_is_initial_device();
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++)
      if (m[i][j] != i * 1000 + j + 1) FAIL("collapse(2): m[%d][%d]=%d (>= 1000000 means host execution)", i, j, m[i][j]);
  // collapse with non-unit steps and offsets
  long s = 0;
#pragma omp target parallel for collapse(2) reduction(+: s)
  for (int i = 3; i < 50; i += 4)
    for (int j = 10; j > -10; j -= 3) s += i * 100 + j;
  long want = 0;
  for (int i = 3; i < 50; i += 4)
    for (int j = 10; j > -10; j -= 3) want += i * 100 + j;
  if (s != want) FAIL("collapse(2) with steps: %ld expected %ld", s, want);
  // collapse(3) with lastprivate-free counting
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++)
      for (int k = 0; k < NK; k++) c3[i][j][k] = 0;
#pragma omp target teams distribute parallel for collapse(3) map(tofrom: c3)
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++)
      for (int k = 0; k < NK; k++) c3[i][j][k]++;
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++)
      for (int k = 0; k < NK; k++)
        if (c3[i][j][k] != 1) FAIL("collapse(3): (%d,%d,%d) ran %d times", i, j, k, c3[i][j][k]);
  // collapse where one inner loop has zero trips: no iterations at all
  int hits = 0, zero = 0;
#pragma omp target parallel for collapse(2) reduction(+: hits)
  for (int i = 0; i < 10; i++)
    for (int j = 0; j < zero; j++) hits++;
  if (hits != 0) FAIL("collapse with zero-trip inner loop ran %d iterations", hits);
  return 0;
}
