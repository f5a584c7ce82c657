// EXPECT: fail
// EXPECT-STDERR: cannot map host address
// EXPECT-STDERR: 1152921504606846976 bytes
// A map whose device allocation cannot succeed (2^60 bytes) ends the program with a message
// naming the host address and the size, instead of crashing or copying into nothing.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  char *p = malloc(64);
  long n = 1L << 60;
  // Alone in its clause: the huge range cannot overlap anything mapped before it.
#pragma omp target enter data map(alloc: p[0:n])
  fprintf(stderr, "a 2^60-byte map succeeded (present: %d)\n", omp_target_is_present(p, omp_get_default_device()));
  free(p);
  return 0;
}
