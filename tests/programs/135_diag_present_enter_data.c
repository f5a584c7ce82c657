// EXPECT: abort
// CFLAGS: -g
// EXPECT-STDERR-BOTH: omptarget message: device mapping required by 'present' map type modifier does not exist for host address 0x
// EXPECT-STDERR-BOTH: omptarget error: Call to getTargetPointer returned null pointer ('present' map type modifier).
// EXPECT-STDERR-BOTH: omptarget error: Consult https://openmp.llvm.org/design/Runtimes.html for debugging options.
// EXPECT-STDERR-BOTH: 135_diag_present_enter_data.c:21:1: omptarget fatal error 1: failure of target construct while offloading is mandatory
// target enter data map(present, to: x) of a variable that is not mapped: the 'present'
// message, the null-pointer error of the failed mapping, the debugging hint and fatal error 1
// at the construct's location, then abort (SIGABRT). No kernel is involved, so none of the
// "abort target" / "before launching the kernel" lines appear.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int x = 1;
  if (omp_get_num_devices() < 1) {
    fprintf(stderr, "no device\n");
    return 0; // exit 0 counts as a failure of this program
  }
#pragma omp target enter data map(present, to: x)
  // Reaching this point means the present check did not fire.
  fprintf(stderr, "enter data map(present) of unmapped x did not fail\n");
  return 0;
}
