// Array-section reductions in `target teams distribute parallel for`: `reduction(+: hist[0:B])`
// over a whole 12-bin histogram (implicitly mapped tofrom, as a reduction item of a combined
// target construct is), the same on a heap array through a pointer, and `reduction(max: a[2:5])`
// on a part of an array whose other elements must stay as they were. Each section is B or 5
// values in one reduction: a runtime that reduces only the first element, or sizes the item as
// one element, gets the others wrong. The original values take part (max keeps a larger one).
// clang-22 runs these loops as one parallel region and one reduction per distribute
// chunk (schedule 91); a 96-byte reduction list at 128 threads does not fit the team-memory
// stash that defers reductions across chunks, so the runtime reduces chunk by chunk. N is kept
// small: on the virtual GPU each such chunk's reduction costs milliseconds (emulated shuffles).
// On the CPU plugin libomp forms the teams; the ENV lines let it form them as asked.
// ENV: KMP_TEAMS_THREAD_LIMIT=8192
// ENV: OMP_NUM_THREADS=8
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 4007
#define B 12
#define A 10

static int bin(int i) { return (int)(((long)i * 2654435761u) % B); }
static long val(int i) { return ((long)i * 40503) % 65521; }

int main(void) {
  static int data[N];
  long want_hist[B], want_max[A];
  for (int b = 0; b < B; b++) want_hist[b] = 3 * b; // the starting values
  for (int k = 0; k < A; k++) want_max[k] = k == 3 ? 100000 : -k; // a[3] starts above every value
  for (int i = 0; i < N; i++) {
    data[i] = bin(i);
    want_hist[data[i]]++;
    int k = 2 + i % 5;
    if (val(i) > want_max[k]) want_max[k] = val(i);
  }

  int on_device = 0;
  long hist[B];
  for (int b = 0; b < B; b++) hist[b] = 3 * b;
#pragma omp target teams distribute parallel for num_teams(8) thread_limit(128) \
    reduction(+ : hist[0:B]) map(to: data[0:N]) map(tofrom: on_device)
  for (int i = 0; i < N; i++) {
    hist[data[i]]++;
    if (i == 0) on_device = !omp_is_initial_device();
  }
  if (!on_device) FAIL("the region did not run on the device");
  for (int b = 0; b < B; b++)
    if (hist[b] != want_hist[b]) FAIL("hist[%d] = %ld, expected %ld", b, hist[b], want_hist[b]);

  // A heap array through a pointer, explicitly mapped, default teams.
  long *h = malloc(B * sizeof *h);
  for (int b = 0; b < B; b++) h[b] = 3 * b;
#pragma omp target teams distribute parallel for reduction(+ : h[0:B]) map(tofrom: h[0:B]) \
    map(to: data[0:N])
  for (int i = 0; i < N; i++) h[data[i]]++;
  for (int b = 0; b < B; b++)
    if (h[b] != want_hist[b]) FAIL("heap hist[%d] = %ld, expected %ld", b, h[b], want_hist[b]);
  free(h);

  // max over a[2:5] only; a[0], a[1], a[7..9] are not reduction items and keep their values.
  long a[A];
  for (int k = 0; k < A; k++) a[k] = k == 3 ? 100000 : -k;
#pragma omp target teams distribute parallel for num_teams(5) thread_limit(64) \
    reduction(max : a[2:5]) map(tofrom: a)
  for (int i = 0; i < N; i++) {
    int k = 2 + i % 5;
    long v = ((long)i * 40503) % 65521;
    if (v > a[k]) a[k] = v;
  }
  for (int k = 0; k < A; k++)
    if (a[k] != want_max[k]) FAIL("a[%d] = %ld, expected %ld", k, a[k], want_max[k]);
  return 0;
}
