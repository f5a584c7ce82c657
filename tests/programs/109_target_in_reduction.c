// target in_reduction inside taskgroup task_reduction: each target task (also nowait ones)
// contributes to the enclosing task reduction through its own device copy of the reduction item.
// Each task adds its part with one atomic update. The OpenMP semantics would allow a plain
// update (the item is private to the task), but clang-22 maps the *original* list item into
// every target task (`tofrom(sum)`, the same host address in each; the `.task_red.` descriptor it
// also passes is unused by the device code) and the kernel reads, adds and stores it plainly, so
// two nowait target tasks whose kernels overlap on a GPU lose an update (an H200: sum=985051,
// expected 1039501, exactly task k=11's 4950*11 missing; LLVM's own device runtime the same).
// An atomic update is correct under both readings.
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
          long part = 0;
          for (int i = 0; i < 100; i++) part += k * i;
#pragma omp atomic
          sum += part;
          if (k <= 4) {
#pragma omp atomic
            prod *= 2.0;
          }
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
