// EXPECT: fail
// target update to(present: x) of data that is not mapped must be a runtime error (OpenMP 5.1).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int x = 1;
#pragma omp target update to(present: x)
  fprintf(stderr, "target update to(present: x) of unmapped x did not fail\n");
  return 0;
}
