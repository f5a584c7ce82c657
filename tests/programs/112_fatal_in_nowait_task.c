// EXPECT: fail
// EXPECT-STDERR: 'present' map of host address
// A fatal mapping error inside a deferred target task (target nowait, run by a libomp
// hidden-helper thread) must end the program; it must not hang.
#include <omp.h>
#include <stdio.h>
int main(void) {
  int x[8] = {0};
#pragma omp target nowait map(present, tofrom: x)
  x[0] = 1;
#pragma omp taskwait
  fprintf(stderr, "no error\n");
  return 0;
}
