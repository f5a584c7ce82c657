// EXPECT: abort
// CFLAGS: -g
// EXPECT-STDERR-BOTH: omptarget message: explicit extension not allowed: host address specified is 0x
// EXPECT-STDERR-BOTH: (40 bytes), but device allocation maps to host at 0x
// EXPECT-STDERR-BOTH: omptarget error: Call to getTargetPointer returned null pointer (device failure or illegal mapping).
// EXPECT-STDERR-BOTH: omptarget error: Call to targetDataBegin failed, abort target.
// EXPECT-STDERR-BOTH: omptarget error: Failed to process data before launching the kernel.
// EXPECT-STDERR-BOTH: omptarget error: Consult https://openmp.llvm.org/design/Runtimes.html for debugging options.
// EXPECT-STDERR-BOTH: 138_diag_explicit_extension.c:26:1: omptarget fatal error 1: failure of target construct while offloading is mandatory
// a[2:3] is mapped by enter data; a target construct then maps a[0:10] explicitly, which
// extends the existing mapping on both sides: LLVM prints the explicit-extension message (the
// new section, 40 bytes, and the mapped one), the null-pointer error of the illegal mapping,
// the kernel-launch error chain, the debugging hint and fatal error 1, then aborts.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int a[10];
  for (int i = 0; i < 10; i++) a[i] = i;
  if (omp_get_num_devices() < 1) {
    fprintf(stderr, "no device\n");
    return 0; // exit 0 counts as a failure of this program
  }
#pragma omp target enter data map(to: a[2:3])
#pragma omp target map(tofrom: a[0:10])
  { a[2]++; }
  // Reaching this point means the extension was accepted.
  fprintf(stderr, "explicit extension of a[2:3] to a[0:10] did not fail (a[2]=%d)\n", a[2]);
  return 0;
}
