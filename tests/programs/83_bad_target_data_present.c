// EXPECT: fail
// target data map(present, alloc: x) of unmapped data is a runtime error.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  double x[10];
  for (int i = 0; i < 10; i++) x[i] = i;
#pragma omp target data map(present, alloc: x)
  {
#pragma omp target
    x[0] = 1.0;
  }
  fprintf(stderr, "target data map(present, alloc: x) of unmapped x did not fail\n");
  return 0;
}
