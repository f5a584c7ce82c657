// EXPECT: abort
// CFLAGS: -g
// EXPECT-STDERR-BOTH: omptarget message: device mapping required by 'present' motion modifier does not exist for host address 0x
// EXPECT-STDERR-BOTH: omptarget error: Consult https://openmp.llvm.org/design/Runtimes.html for debugging options.
// EXPECT-STDERR-BOTH: 137_diag_present_update_to.c:22:1: omptarget fatal error 1: failure of target construct while offloading is mandatory
// target update to(present: x) of a variable that is not mapped (another one is): the
// 'present' motion-modifier message, the debugging hint and fatal error 1 at the construct's
// location, then abort (SIGABRT).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int x = 1, y = 2;
  if (omp_get_num_devices() < 1) {
    fprintf(stderr, "no device\n");
    return 0; // exit 0 counts as a failure of this program
  }
#pragma omp target enter data map(to: y)
  // Without 'present' an update of unmapped data does nothing.
#pragma omp target update to(x)
#pragma omp target update to(present: x)
  // Reaching this point means the present check did not fire.
  fprintf(stderr, "update to(present: x) of unmapped x did not fail\n");
  return 0;
}
