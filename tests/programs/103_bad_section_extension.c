// EXPECT: fail
// EXPECT-STDERR-BOTH: omptarget message: explicit extension not allowed: host address specified is 0x
// A section that extends past an already mapped section (a[0:10] mapped, then a[5:10]) cannot
// be given corresponding storage; the runtime must end the program with an error rather than
// silently transfer part of it or write beyond the device block.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) {
  int a[20];
  for (int i = 0; i < 20; i++) a[i] = i;
#pragma omp target data map(tofrom: a[0:10])
  {
#pragma omp target map(tofrom: a[5:10])
    for (int i = 5; i < 15; i++) a[i] += 100;
  }
  printf("no error; a[12]=%d\n", a[12]);
  return 0;
}
