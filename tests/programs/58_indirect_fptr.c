// declare target indirect (OpenMP 5.1): call device functions through host function pointers.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

#pragma omp begin declare target indirect
int twice(int x) { return 2 * x; }
int negate(int x) { return -x; }
int square(int x) { return x * x; }
#pragma omp end declare target

typedef int (*fn_t)(int);

int main(void) {
  fn_t f = square;
  int r = 0, init = -1;
#pragma omp target firstprivate(f) map(from: r, init)
  {
    init = omp_is_initial_device();
    r = f(9);
  }
  if (init != 0) FAIL("region ran on host");
  if (r != 81) FAIL("indirect call via firstprivate host fptr: %d", r);
  fn_t table[3] = {twice, negate, square};
  int out[3] = {0, 0, 0};
#pragma omp target map(to: table) map(from: out)
  for (int k = 0; k < 3; k++) out[k] = table[k](k + 5);
  if (out[0] != 10 || out[1] != -6 || out[2] != 49) FAIL("indirect table calls: %d %d %d", out[0], out[1], out[2]);
  // selecting the function on the host per iteration
  int res[64];
#pragma omp target teams distribute parallel for map(from: res) firstprivate(table)
  for (int i = 0; i < 64; i++) res[i] = table[i % 3](i);
  for (int i = 0; i < 64; i++) {
    int want = table[i % 3](i);
    if (res[i] != want) FAIL("res[%d]=%d expected %d", i, res[i], want);
  }
  return 0;
}
