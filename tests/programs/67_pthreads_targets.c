// pthreads (not OpenMP threads) each mapping data and launching target regions concurrently.
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define T 8
#define N 2048
#define ITERS 100

static long shared_arr[N];
static int errs[T];

static void *worker(void *arg) {
  int t = (int)(long)arg;
  double *mine = malloc(N * sizeof(double));
  for (int i = 0; i < N; i++) mine[i] = t;
#pragma omp target enter data map(to: mine[0:N])
  for (int k = 0; k < ITERS; k++) {
    int lo = (t * 211 + k * 31) % (N - 256);
    int onhost = 0;
#pragma omp target map(tofrom: shared_arr[lo:256]) map(from: onhost)
    {
      onhost = omp_is_initial_device();
      for (int i = lo; i < lo + 256; i++) {
#pragma omp atomic
        shared_arr[i] += t + 1;
      }
      for (int i = 0; i < N; i++) mine[i] += 1.0;
    }
    if (onhost) errs[t]++;
  }
#pragma omp target exit data map(from: mine[0:N])
  for (int i = 0; i < N; i++)
    if (mine[i] != t + ITERS) errs[t]++;
  free(mine);
  return NULL;
}

int main(void) {
  pthread_t th[T];
#pragma omp target enter data map(to: shared_arr)
  for (long t = 0; t < T; t++)
    if (pthread_create(&th[t], NULL, worker, (void *)t)) FAIL("pthread_create failed");
  for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
  for (int i = 0; i < N; i++)
    if (shared_arr[i] != 0) FAIL("shared array copied back early");
#pragma omp target exit data map(from: shared_arr)
  for (int t = 0; t < T; t++)
    if (errs[t]) FAIL("thread %d saw %d errors", t, errs[t]);
  static long want[N];
  for (int t = 0; t < T; t++)
    for (int k = 0; k < ITERS; k++) {
      int lo = (t * 211 + k * 31) % (N - 256);
      for (int i = lo; i < lo + 256; i++) want[i] += t + 1;
    }
  for (int i = 0; i < N; i++)
    if (shared_arr[i] != want[i]) FAIL("shared_arr[%d]=%ld expected %ld", i, shared_arr[i], want[i]);
  return 0;
}
