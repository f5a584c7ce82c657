// EXPECT: abort
// CFLAGS: -g
// EXPECT-STDERR-BOTH: omptarget message: device mapping required by 'present' map type modifier does not exist for host address 0x
// EXPECT-STDERR-BOTH: omptarget error: Consult https://openmp.llvm.org/design/Runtimes.html for debugging options.
// EXPECT-STDERR-BOTH: 136_diag_present_exit_data.c:24:1: omptarget fatal error 1: failure of target construct while offloading is mandatory
// target exit data map(present, from: x) of a variable that is no longer mapped: the
// 'present' message, the debugging hint and fatal error 1 at the construct's location, then
// abort (SIGABRT).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int x = 1;
  if (omp_get_num_devices() < 1) {
    fprintf(stderr, "no device\n");
    return 0; // exit 0 counts as a failure of this program
  }
  // Mapped and unmapped once: the device is in use, but x is not mapped any more.
#pragma omp target enter data map(to: x)
#pragma omp target exit data map(from: x)
  if (omp_target_is_present(&x, omp_get_default_device()))
    fprintf(stderr, "x still mapped after its exit data\n");
#pragma omp target exit data map(present, from: x)
  // Reaching this point means the present check did not fire.
  fprintf(stderr, "exit data map(present) of unmapped x did not fail (x=%d)\n", x);
  return 0;
}
