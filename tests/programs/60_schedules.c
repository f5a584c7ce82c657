// Worksharing on the device: schedule(static), static chunked, dynamic, guided.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 1003

static int check(const int *cnt, const char *what) {
  for (int i = 0; i < N; i++)
    if (cnt[i] != 1) { fprintf(stderr, "%s: iteration %d executed %d times\n", what, i, cnt[i]); return 1; }
  return 0;
}

int main(void) {
  int cnt[N], owner[N], nthr = 0, ondev = 0;
  for (int i = 0; i < N; i++) cnt[i] = 0;
#pragma omp target parallel for schedule(static) num_threads(4) map(tofrom: cnt, owner, nthr, ondev)
  for (int i = 0; i < N; i++) {
    cnt[i]++;
    owner[i] = omp_get_thread_num();
    if (i == 0) { nthr = omp_get_num_threads(); ondev = !omp_is_initial_device(); }
  }
  if (!ondev) FAIL("region ran on host");
  if (check(cnt, "static")) return 1;
  // schedule(static) without chunk: contiguous blocks, non-decreasing thread ids
  for (int i = 1; i < N; i++)
    if (owner[i] < owner[i - 1]) FAIL("static: thread ids not monotonic at %d (%d after %d)", i, owner[i], owner[i - 1]);
  if (owner[0] != 0 || owner[N - 1] != nthr - 1) FAIL("static: first/last owner %d/%d with %d threads", owner[0], owner[N - 1], nthr);
  // static chunked: chunk c -> thread (i/c) % nthreads
  for (int i = 0; i < N; i++) cnt[i] = 0;
#pragma omp target parallel for schedule(static, 7) num_threads(4) map(tofrom: cnt, owner, nthr)
  for (int i = 0; i < N; i++) {
    cnt[i]++;
    owner[i] = omp_get_thread_num();
    if (i == 0) nthr = omp_get_num_threads();
  }
  if (check(cnt, "static,7")) return 1;
  for (int i = 0; i < N; i++)
    if (owner[i] != (i / 7) % nthr) FAIL("static,7: iteration %d on thread %d expected %d", i, owner[i], (i / 7) % nthr);
  for (int i = 0; i < N; i++) cnt[i] = 0;
#pragma omp target parallel for schedule(dynamic, 3) map(tofrom: cnt)
  for (int i = 0; i < N; i++) cnt[i]++;
  if (check(cnt, "dynamic,3")) return 1;
  for (int i = 0; i < N; i++) cnt[i] = 0;
#pragma omp target parallel for schedule(dynamic) map(tofrom: cnt)
  for (int i = 0; i < N; i++) cnt[i]++;
  if (check(cnt, "dynamic")) return 1;
  for (int i = 0; i < N; i++) cnt[i] = 0;
#pragma omp target parallel for schedule(guided, 5) map(tofrom: cnt)
  for (int i = 0; i < N; i++) cnt[i]++;
  if (check(cnt, "guided,5")) return 1;
  for (int i = 0; i < N; i++) cnt[i] = 0;
#pragma omp target teams distribute parallel for schedule(dynamic, 16) map(tofrom: cnt)
  for (int i = 0; i < N; i++) cnt[i]++;
  if (check(cnt, "teams distribute parallel for dynamic")) return 1;
  for (int i = 0; i < N; i++) cnt[i] = 0;
#pragma omp target teams distribute parallel for dist_schedule(static, 100) schedule(static, 1) map(tofrom: cnt)
  for (int i = 0; i < N; i++) cnt[i]++;
  if (check(cnt, "dist_schedule(static,100)")) return 1;
  // auto and runtime
  for (int i = 0; i < N; i++) cnt[i] = 0;
#pragma omp target parallel for schedule(auto) map(tofrom: cnt)
  for (int i = 0; i < N; i++) cnt[i]++;
  if (check(cnt, "auto")) return 1;
  for (int i = 0; i < N; i++) cnt[i] = 0;
#pragma omp target parallel for schedule(runtime) map(tofrom: cnt)
  for (int i = 0; i < N; i++) cnt[i]++;
  if (check(cnt, "runtime")) return 1;
  return 0;
}
