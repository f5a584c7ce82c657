// EXPECT: fail
// EXPECT-STDERR-BOTH: omptarget message: device mapping required by 'present' map type modifier does not exist for host address 0x
// A deferred target task (nowait, inside parallel/single, behind a dependence) whose
// map(present, ...) item is not mapped must end the program with the present error; it must
// neither hang the waiting tasks nor let the region run.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) {
  int x[8] = {0}, y = 0, ran = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp target enter data map(to: y) nowait depend(out: y)
#pragma omp target nowait depend(in: y) map(present, tofrom: x) map(tofrom: ran)
    ran = 1;
#pragma omp task depend(in: y)
    y = 1;
#pragma omp taskwait
  }
  fprintf(stderr, "no error (ran=%d)\n", ran);
  return 0;
}
