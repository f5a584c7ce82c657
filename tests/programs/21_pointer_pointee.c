// Mapping a pointer and its pointee; pointer-to-pointer chains.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 64

int main(void) {
  int offdev = 0;
  int *p = malloc(N * sizeof(int));
  int *orig = p;
  for (int i = 0; i < N; i++) p[i] = i;
  long devaddr = 0;
  // map(tofrom: p[0:N]): p inside is the device address of the pointee
#pragma omp target map(tofrom: p[0:N]) map(from: devaddr) map(tofrom: offdev)
  {
    offdev |= omp_is_initial_device();
    devaddr = (long)p;
    for (int i = 0; i < N; i++) p[i] += 1;
  }
  if (offdev) FAIL("target region ran on the host");
  if (devaddr == (long)orig) FAIL("pointer not translated to device address");
  if (p != orig) FAIL("host pointer variable changed");
  for (int i = 0; i < N; i++)
    if (p[i] != i + 1) FAIL("p[%d]=%d", i, p[i]);
  // map the pointer variable itself and the pointee: pointer gets attached
#pragma omp target enter data map(to: p) map(to: p[0:N])
  int **pp = &p;
  int first = -1;
#pragma omp target map(from: first) map(to: pp[0:1])
  {
    first = (*pp)[3]; // *pp is the device copy of p, attached to device pointee
    (*pp)[3] = 333;
  }
  if (first != 4) FAIL("through mapped pointer: first=%d expected 4", first);
#pragma omp target exit data map(release: p) map(from: p[0:N])
  if (p != orig) FAIL("host p changed by exit data");
  if (p[3] != 333) FAIL("p[3]=%d expected 333", p[3]);
  // array of row pointers, each row mapped separately
  int *rows[3];
  for (int r = 0; r < 3; r++) {
    rows[r] = malloc(4 * sizeof(int));
    for (int c = 0; c < 4; c++) rows[r][c] = r * 10 + c;
  }
  int **rp = rows;
#pragma omp target enter data map(to: rp[0:3])
  for (int r = 0; r < 3; r++) {
#pragma omp target enter data map(to: rp[r][0:4])
  }
#pragma omp target
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 4; c++) rp[r][c] *= 2;
  for (int r = 0; r < 3; r++) {
#pragma omp target exit data map(from: rp[r][0:4])
  }
#pragma omp target exit data map(release: rp[0:3])
  for (int r = 0; r < 3; r++) {
    if (rows[r] != rp[r]) FAIL("host row pointer %d overwritten", r);
    for (int c = 0; c < 4; c++)
      if (rows[r][c] != 2 * (r * 10 + c)) FAIL("rows[%d][%d]=%d", r, c, rows[r][c]);
    free(rows[r]);
  }
  free(p);
  return 0;
}
