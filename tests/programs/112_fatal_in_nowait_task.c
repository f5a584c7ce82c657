// EXPECT: fail
// EXPECT-STDERR-BOTH: omptarget message: device mapping required by 'present' map type modifier does not exist for host address 0x
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
