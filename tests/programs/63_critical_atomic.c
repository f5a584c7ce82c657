// Device synchronization: critical, named critical, atomic update/capture/read/write.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 20000

int main(void) {
  long crit = 0, crit2 = 0;
  int au = 0, ondev = 0;
  double ad = 0;
#pragma omp target teams distribute parallel for map(tofrom: crit, crit2, au, ad, ondev)
  for (int i = 0; i < N; i++) {
    if (i == 0) ondev = !omp_is_initial_device();
#pragma omp critical
    crit += i;
#pragma omp critical(other)
    { long t = crit2; crit2 = t + 1; }
#pragma omp atomic update
    au += 2;
#pragma omp atomic
    ad += 0.5;
  }
  if (!ondev) FAIL("region ran on host");
  if (crit != (long)N * (N - 1) / 2) FAIL("critical sum %ld", crit);
  if (crit2 != N) FAIL("named critical count %ld", crit2);
  if (au != 2 * N) FAIL("atomic update %d", au);
  if (ad != 0.5 * N) FAIL("atomic double %g", ad);
  // atomic capture gives every iteration a unique ticket
  int ticket = 0;
  int *got = calloc(N, sizeof(int));
#pragma omp target teams distribute parallel for map(tofrom: ticket, got[0:N])
  for (int i = 0; i < N; i++) {
    int mine;
#pragma omp atomic capture
    mine = ticket++;
    if (mine >= 0 && mine < N) {
#pragma omp atomic
      got[mine]++;
    }
  }
  if (ticket != N) FAIL("atomic capture final %d", ticket);
  for (int i = 0; i < N; i++)
    if (got[i] != 1) FAIL("ticket %d handed out %d times", i, got[i]);
  // atomic read / write
  long flag = 0, readv = -1;
#pragma omp target parallel num_threads(2) map(tofrom: flag, readv)
  {
    if (omp_get_thread_num() == 0) {
#pragma omp atomic write
      flag = 12345;
    }
#pragma omp barrier
    if (omp_get_thread_num() == omp_get_num_threads() - 1) {
#pragma omp atomic read
      readv = flag;
    }
  }
  if (flag != 12345 || readv != 12345) FAIL("atomic write/read: %ld %ld", flag, readv);
  // atomic compare (min) via capture loop
  int mn = 1 << 30;
#pragma omp target teams distribute parallel for map(tofrom: mn)
  for (int i = 0; i < 1000; i++) {
    int v = (i * 7919) % 1000 + 3;
#pragma omp critical
    if (v < mn) mn = v;
  }
  if (mn != 3) FAIL("critical min %d", mn);
  free(got);
  return 0;
}
