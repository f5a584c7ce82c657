// Stress: 16 host threads x 1000 rounds mixing every kind of mapping on one device:
//  - sections of a shared counter array inside its enter-data mapping (atomics, no copies);
//  - a shared read-only table mapped per region by every thread at once, so threads race to
//    create, use and remove the same entry (a user must never see it before its data arrived);
//  - target update to/from of each thread's own slice of a shared array;
//  - enter/exit data of a per-thread buffer, with regions on sections of it both while it is
//    entered (no copies) and while it is not (each region copies its own section).
// Every result is checked exactly, and at the end nothing may remain mapped (checked here with
// omp_target_is_present). Not run with LIBOMPTARGET_INFO=4: both runtimes dump every table after
// every construct then, as LLVM does, which makes 16000 constructs far too slow to test.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define T 16
#define ROUNDS 1000
#define N 4096 // shared counters
#define LEN 32
#define W 64   // slice of D per thread
#define K 512  // shared read-only table
#define M 128  // per-thread buffer
#define SEC 16

static int start_of(int t, int k) { return (int)(((unsigned)t * 7919u + (unsigned)k * 104729u) % (N - LEN)); }

int main(void) {
  int dev = omp_get_default_device();
  int *S = calloc(N, sizeof(int));
  int *D = calloc(T * W, sizeof(int));
  int *C = malloc(K * sizeof(int));
  int *buffers[T];
  long sum_c = 0;
  for (int i = 0; i < K; i++) { C[i] = 3 * i + 1; sum_c += C[i]; }
  long bad_table = 0, bad_slice = 0, bad_buffer = 0, on_host = 0;
#pragma omp target enter data map(to: S[0:N]) map(to: D[0:T * W])
#pragma omp parallel num_threads(T) reduction(+: bad_table, bad_slice, bad_buffer, on_host)
  {
    int t = omp_get_thread_num();
    int *mine = malloc(M * sizeof(int));
    int model[M];
    for (int i = 0; i < M; i++) mine[i] = model[i] = t * 1000 + i;
    buffers[t] = mine;
    for (int k = 0; k < ROUNDS; k++) {
      // 1. shared counters: a section inside the enter-data mapping of S
      int s = start_of(t, k);
#pragma omp target map(tofrom: S[s:LEN])
      for (int i = s; i < s + LEN; i++) {
#pragma omp atomic
        S[i]++;
      }
      // 2. the shared table, mapped and unmapped by every thread concurrently
      long got = -1;
      int init = -1;
#pragma omp target map(to: C[0:K]) map(from: got, init)
      {
        long sum = 0;
        for (int i = 0; i < K; i++) sum += C[i];
        got = sum;
        init = omp_is_initial_device();
      }
      if (got != sum_c) bad_table++;
      on_host += init != 0;
      // 3. own slice of D: host writes, update to, device doubles, update from
      int base = t * W;
      for (int i = 0; i < W; i++) D[base + i] = base + i + k;
#pragma omp target update to(D[base:W])
#pragma omp target map(tofrom: D[base:W])
      for (int i = 0; i < W; i++) D[base + i] *= 2;
#pragma omp target update from(D[base:W])
      for (int i = 0; i < W; i++)
        if (D[base + i] != 2 * (base + i + k)) { bad_slice++; break; }
      // 4. own buffer: entered for phases 0..2, mapped per region for phases 3..4
      int phase = k % 5;
      if (phase == 0) {
#pragma omp target enter data map(to: mine[0:M])
      }
      int a = (t * 31 + k * 17) % (M - SEC);
#pragma omp target map(tofrom: mine[a:SEC])
      for (int i = a; i < a + SEC; i++) mine[i] += 1 + t;
      for (int i = a; i < a + SEC; i++) model[i] += 1 + t;
      if (phase == 2) {
#pragma omp target exit data map(from: mine[0:M])
      }
      if (phase >= 2)
        for (int i = 0; i < M; i++)
          if (mine[i] != model[i]) { bad_buffer++; break; }
    }
  }
#pragma omp target exit data map(from: S[0:N]) map(delete: D[0:T * W])
  if (on_host) FAIL("%ld regions ran on the host", on_host);
  if (bad_table) FAIL("%ld regions saw the shared table before its data arrived (or not at all)", bad_table);
  if (bad_slice) FAIL("%ld rounds got a wrong slice back through target update", bad_slice);
  if (bad_buffer) FAIL("%ld rounds found a per-thread buffer with wrong contents", bad_buffer);
  int *want = calloc(N, sizeof(int));
  for (int t = 0; t < T; t++)
    for (int k = 0; k < ROUNDS; k++)
      for (int i = start_of(t, k); i < start_of(t, k) + LEN; i++) want[i]++;
  for (int i = 0; i < N; i++)
    if (S[i] != want[i]) FAIL("S[%d]=%d expected %d", i, S[i], want[i]);
  // Nothing may remain mapped.
  int *all[3 + T] = {S, D, C};
  int sizes[3 + T] = {N, T * W, K};
  for (int t = 0; t < T; t++) { all[3 + t] = buffers[t]; sizes[3 + t] = M; }
  for (int j = 0; j < 3 + T; j++)
    if (omp_target_is_present(all[j], dev) || omp_target_is_present(all[j] + sizes[j] - 1, dev))
      FAIL("array %d still mapped at exit", j);
  for (int t = 0; t < T; t++) free(buffers[t]);
  free(S); free(D); free(C); free(want);
  return 0;
}
