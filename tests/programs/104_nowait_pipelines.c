// Many independent asynchronous pipelines in one parallel/single region: for each of 48 buffers,
// enter data nowait depend(out) -> 3 x target nowait depend(inout) (order-sensitive updates) ->
// update from nowait -> host task depend(in) checking the partial result -> target nowait ->
// exit data map(from) nowait -> host task checking the final result. Pipelines interleave freely.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define NB 48
#define N 512

static long expect_after(int b, int i, int rounds) {
  long v = b * 1000 + i;
  for (int k = 1; k <= rounds; k++) v = v * 3 + k + b;
  return v;
}

int main(void) {
  long *buf[NB];
  int dev = omp_get_default_device();
  int bad_dev = 0, bad_mid = -1, bad_fin = -1, present_after = 0;
  for (int b = 0; b < NB; b++) {
    buf[b] = malloc(N * sizeof(long));
    for (int i = 0; i < N; i++) buf[b][i] = b * 1000 + i;
  }
#pragma omp parallel num_threads(4)
#pragma omp single
  {
    for (int b = 0; b < NB; b++) {
      long *p = buf[b];
#pragma omp target enter data map(to: p[0:N]) nowait depend(out: p[0])
      for (int k = 1; k <= 3; k++) {
#pragma omp target nowait depend(inout: p[0]) map(tofrom: bad_dev) firstprivate(k, b)
        {
          if (omp_is_initial_device()) bad_dev = 1;
          for (int i = 0; i < N; i++) p[i] = p[i] * 3 + k + b;
        }
      }
#pragma omp target update from(p[0:N]) nowait depend(inout: p[0])
#pragma omp task depend(inout: p[0]) firstprivate(b, p) shared(bad_mid)
      {
        for (int i = 0; i < N; i++)
          if (p[i] != expect_after(b, i, 3)) {
#pragma omp atomic write
            bad_mid = b;
            break;
          }
        for (int i = 0; i < N; i++) p[i] = -7; // must not reach the device copy
      }
#pragma omp target nowait depend(inout: p[0]) firstprivate(b)
      for (int i = 0; i < N; i++) p[i] = p[i] * 3 + 4 + b;
#pragma omp target exit data map(from: p[0:N]) nowait depend(inout: p[0])
#pragma omp task depend(in: p[0]) firstprivate(b, p) shared(bad_fin, present_after)
      {
        if (omp_target_is_present(p, dev)) {
#pragma omp atomic write
          present_after = 1;
        }
        for (int i = 0; i < N; i++)
          if (p[i] != expect_after(b, i, 4)) {
#pragma omp atomic write
            bad_fin = b;
            break;
          }
      }
    }
  }
  if (bad_dev) FAIL("a nowait target region ran on the host");
  if (bad_mid >= 0) FAIL("buffer %d: update from nowait gave wrong intermediate values", bad_mid);
  if (bad_fin >= 0) FAIL("buffer %d: wrong final values after exit data nowait", bad_fin);
  if (present_after) FAIL("a buffer was still mapped after its exit data completed");
  for (int b = 0; b < NB; b++) free(buf[b]);
  return 0;
}
