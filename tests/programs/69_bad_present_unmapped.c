// EXPECT: fail
// EXPECT-STDERR-BOTH: omptarget message: device mapping required by 'present' map type modifier does not exist for host address 0x
// map(present, to: x) of data that is not mapped must be a runtime error (program terminates).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int x = 1;
  int y[4] = {0, 0, 0, 0};
#pragma omp target enter data map(to: y)
#pragma omp target map(present, to: x) map(present, tofrom: y)
  { y[0] = x; }
  // Reaching this point means the present check did not fire.
  fprintf(stderr, "map(present) of unmapped x did not fail (y[0]=%d)\n", y[0]);
  return 0;
}
