// EXPECT: abort
// CFLAGS: -g
// EXPECT-STDERR-BOTH: omptarget message: device mapping required by 'present' map type modifier does not exist for host address 0x
// EXPECT-STDERR-BOTH: omptarget error: Call to getTargetPointer returned null pointer ('present' map type modifier).
// EXPECT-STDERR-BOTH: omptarget error: Call to targetDataBegin failed, abort target.
// EXPECT-STDERR-BOTH: omptarget error: Failed to process data before launching the kernel.
// EXPECT-STDERR-BOTH: omptarget error: Consult https://openmp.llvm.org/design/Runtimes.html for debugging options.
// EXPECT-STDERR-BOTH: 134_diag_present_target.c:23:1: omptarget fatal error 1: failure of target construct while offloading is mandatory
// A target construct with map(present, ...) of a variable that is not mapped: LLVM's runtime
// prints the 'present' message, the chain of errors of the failed kernel launch, the hint to
// the debugging documentation and, as the program was built with -g, the construct's
// file:line:col before fatal error 1, then aborts (SIGABRT).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int x = 1;
  if (omp_get_num_devices() < 1) {
    fprintf(stderr, "no device\n");
    return 0; // exit 0 counts as a failure of this program
  }
#pragma omp target map(present, tofrom: x)
  { x++; }
  // Reaching this point means the present check did not fire.
  fprintf(stderr, "map(present) of unmapped x did not fail (x=%d)\n", x);
  return 0;
}
