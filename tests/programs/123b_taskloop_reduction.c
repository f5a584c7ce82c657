// taskloop reduction inside target regions (clang-22 accepts it there; it compiles to the
// task-reduction entry points __kmpc_taskred_init and __kmpc_task_reduction_get_th_data):
// reduction(+) inside single in a parallel region, reduction(+) and reduction(max) with two
// variables in a plain generic target region (the encountering thread runs every task), and a
// reduction(*) over a loop with a negative stride. The original value takes part in the result;
// every iteration runs exactly once (count array). Bounds come from the host at run time.
// ENV: OMP_NUM_THREADS=8
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 200

int main(int argc, char **argv) {
  (void)argv;
  int n = N + (argc > 100);
  // a local, not a static: clang compiles a task nested in a target region to use a static
  // local's own (device global) copy, not the mapped one
  int cnt[3][N + 1] = {{0}};
  long red_par = -1, red_gen = -1, mx_gen = -1;
  double prod = -1;
  int ondev = 0, nthr = -1;

#pragma omp target map(tofrom: cnt, red_par, red_gen, mx_gen, prod, ondev, nthr) firstprivate(n)
  {
    ondev = !omp_is_initial_device();
#pragma omp parallel num_threads(8)
    {
#pragma omp single
      {
        nthr = omp_get_num_threads();
        long x = 5;
#pragma omp taskloop reduction(+: x) grainsize(9)
        for (int i = 0; i < n; i++) {
          x += i;
#pragma omp atomic
          cnt[0][i]++;
        }
        red_par = x;
      }
    }
    // generic region: two reductions on one taskloop
    long y = 7, m = -50;
#pragma omp taskloop reduction(+: y) reduction(max: m) num_tasks(3) shared(cnt)
    for (int i = 0; i < n; i++) {
      y += 2 * i;
      long v = (long)((i * 37) % n);
      if (v > m) m = v;
      cnt[1][i]++;
    }
    red_gen = y;
    mx_gen = m;
    // negative stride; exact factors: 2 for every 10th i, else 1
    double p = 3.0;
#pragma omp taskloop reduction(*: p) grainsize(4) shared(cnt)
    for (int i = n - 1; i >= 0; i -= 1) {
      p *= (i % 10 == 0) ? 2.0 : 1.0;
      cnt[2][i]++;
    }
    prod = p;
  }
  if (!ondev) FAIL("target region ran on the host");
  if (nthr < 1 || nthr > 8) FAIL("parallel num_threads(8) gave %d threads", nthr);
  static const char *names[3] = {"taskloop reduction(+) in parallel/single", "taskloop reduction(+) reduction(max) in a generic region",
                                 "taskloop reduction(*) with negative stride"};
  for (int c = 0; c < 3; c++)
    for (int i = 0; i <= N; i++)
      if (cnt[c][i] != (i < n)) FAIL("%s: iteration %d ran %d times", names[c], i, cnt[c][i]);
  long want_par = 5 + (long)n * (n - 1) / 2, want_gen = 7 + (long)n * (n - 1);
  long want_max = -50;
  for (int i = 0; i < n; i++)
    if ((i * 37) % n > want_max) want_max = (i * 37) % n;
  double want_prod = 3.0;
  for (int i = 0; i < n; i += 10) want_prod *= 2.0;
  if (red_par != want_par) FAIL("%s gave %ld, expected %ld", names[0], red_par, want_par);
  if (red_gen != want_gen) FAIL("%s: sum %ld, expected %ld", names[1], red_gen, want_gen);
  if (mx_gen != want_max) FAIL("%s: max %ld, expected %ld", names[1], mx_gen, want_max);
  if (prod != want_prod) FAIL("%s gave %g, expected %g", names[2], prod, want_prod);
  return 0;
}
