// LLVM-REF: fails (LLVM 22 merges dimensions of a non-contiguous update whenever count x stride equals the next outer stride, even where they do not abut, and then copies one element per piece: t[1:2][0:2:2][3:2] comes back wrong)
// target update of strided sections with non-zero lower bounds, in the combinations clang-22's
// descriptor expresses exactly: a lower bound on a unit-stride dimension next to a strided
// dimension that starts at 0 (m[1:3][0:3:2], t[1:2][0:2:2][3:2], to(m[4:2][0:3:3])).
// Not tested: a lower bound on a dimension that also has a stride (a[1:5:3]). clang-22 passes
// that lower bound in elements while the descriptor's stride is in bytes and already includes
// the section stride; the runtime contract (LLVM 22's and this runtime's) scales the lower bound
// by that stride, so a[1:5:3] names elements 3, 6, 9, 12, 15 with either runtime, and the
// descriptor does not carry what would be needed to do otherwise for 2-D arrays.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int m[6][8];
int t[3][4][5];

static int mval(int i, int j) { return 1 + i * 8 + j; }
static int tval(int i, int j, int k) { return 1000 + i * 100 + j * 10 + k; }

int main(void) {
  int offdev = 0;
#pragma omp target enter data map(to: m, t)
#pragma omp target map(tofrom: offdev)
  {
    offdev |= omp_is_initial_device();
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 8; j++) m[i][j] = mval(i, j);
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 4; j++)
        for (int k = 0; k < 5; k++) t[i][j][k] = tval(i, j, k);
  }
  if (offdev) FAIL("target region ran on the host");
#pragma omp target update from(m[1:3][0:3:2]) // rows 1..3 x cols 0, 2, 4
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 8; j++) {
      int want = (i >= 1 && i <= 3 && j % 2 == 0 && j <= 4) ? mval(i, j) : 0;
      if (m[i][j] != want) FAIL("update from(m[1:3][0:3:2]): m[%d][%d]=%d expected %d", i, j, m[i][j], want);
    }
#pragma omp target update from(t[1:2][0:2:2][3:2]) // planes 1..2 x rows 0, 2 x cols 3..4
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++)
      for (int k = 0; k < 5; k++) {
        int want = (i >= 1 && (j == 0 || j == 2) && k >= 3) ? tval(i, j, k) : 0;
        if (t[i][j][k] != want) FAIL("update from(t[1:2][0:2:2][3:2]): t[%d][%d][%d]=%d expected %d", i, j, k, t[i][j][k], want);
      }
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 8; j++) m[i][j] = -mval(i, j);
#pragma omp target update to(m[4:2][0:3:3]) // rows 4..5 x cols 0, 3, 6
  int dev[6][8];
#pragma omp target map(from: dev)
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 8; j++) dev[i][j] = m[i][j];
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 8; j++) {
      int want = (i >= 4 && j % 3 == 0) ? -mval(i, j) : mval(i, j);
      if (dev[i][j] != want) FAIL("update to(m[4:2][0:3:3]): device m[%d][%d]=%d expected %d", i, j, dev[i][j], want);
    }
#pragma omp target exit data map(delete: m, t)
  return 0;
}
