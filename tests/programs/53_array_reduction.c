// Array reductions (array sections) on the device.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 20000
#define B 16

int main(void) {
  int offdev = 0;
  int hist[B] = {0};
  int *data = malloc(N * sizeof(int));
  for (int i = 0; i < N; i++) data[i] = (i * 31 + 7) % B;
#pragma omp target teams distribute parallel for map(to: data[0:N]) reduction(+: hist[0:B]) map(tofrom: offdev)
  for (int i = 0; i < N; i++) { hist[data[i]]++; if (i == 0) offdev = omp_is_initial_device(); }
  if (offdev) FAIL("target region ran on the host");
  int want[B] = {0};
  for (int i = 0; i < N; i++) want[data[i]]++;
  for (int b = 0; b < B; b++)
    if (hist[b] != want[b]) FAIL("hist[%d]=%d expected %d", b, hist[b], want[b]);
  // max reduction over a section of a heap array, with offset
  double *mx = malloc(8 * sizeof(double));
  for (int k = 0; k < 8; k++) mx[k] = -1.0;
#pragma omp target parallel for reduction(max: mx[2:4])
  for (int i = 0; i < 1000; i++) {
    int k = 2 + i % 4;
    double v = (double)((i * 13) % 997);
    if (v > mx[k]) mx[k] = v;
  }
  double wmx[8];
  for (int k = 0; k < 8; k++) wmx[k] = -1.0;
  for (int i = 0; i < 1000; i++) {
    int k = 2 + i % 4;
    double v = (double)((i * 13) % 997);
    if (v > wmx[k]) wmx[k] = v;
  }
  for (int k = 0; k < 8; k++)
    if (mx[k] != wmx[k]) FAIL("mx[%d]=%g expected %g", k, mx[k], wmx[k]);
  // reduction on a whole fixed-size array with initial contents
  long acc[4] = {100, 200, 300, 400};
#pragma omp target teams distribute reduction(+: acc)
  for (int i = 0; i < 400; i++) acc[i % 4] += 1;
  for (int k = 0; k < 4; k++)
    if (acc[k] != 100 * (k + 1) + 100) FAIL("acc[%d]=%ld", k, acc[k]);
  free(data); free(mx);
  return 0;
}
