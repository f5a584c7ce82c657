// target in_reduction inside taskgroup task_reduction: each target task (also nowait ones)
// contributes to the enclosing task reduction through its own device copy of the reduction item.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  long sum = 0;
  int offdev = 0;
  double prod = 1.0;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp taskgroup task_reduction(+: sum) task_reduction(*: prod)
    {
      for (int k = 1; k <= 20; k++) {
#pragma omp target in_reduction(+: sum) in_reduction(*: prod) nowait map(tofrom: offdev) firstprivate(k)
        {
          offdev |= omp_is_initial_device();
          for (int i = 0; i < 100; i++) sum += k * i;
          if (k <= 4) prod *= 2.0;
        }
      }
#pragma omp task in_reduction(+: sum)
      sum += 1;
    }
  }
  if (offdev) FAIL("region ran on the host");
  long want = 210L * 4950 + 1;
  if (sum != want) FAIL("target in_reduction(+): sum=%ld expected %ld", sum, want);
  if (prod != 16.0) FAIL("target in_reduction(*): prod=%g expected 16", prod);
  return 0;
}
