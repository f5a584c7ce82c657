// An access past the end of a team variable: a[8] of int a[8], which the parallel region
// shares. On a GPU it writes whatever lies next in shared memory; the virtual GPU finds it in
// the redzone after the object and fails the launch.
// CFLAGS: -g
// EXPECT: abort
// EXPECT-STDERR: out-of-bounds write of team memory in team 0 by thread 3: a 4-byte access at offset 32 of
// EXPECT-STDERR: shared_out_of_bounds.c:22:
#include <omp.h>
#include <stdio.h>
int main(int argc, char **argv) {
  (void)argv;
  int past = 8 + (argc > 100); // not a compile-time constant
  int out = -1;
#pragma omp target teams num_teams(1) thread_limit(128) map(tofrom: out) firstprivate(past)
  {
    int a[8];
    for (int i = 0; i < 8; i++) a[i] = i;
#pragma omp parallel num_threads(32)
    {
      int t = omp_get_thread_num();
      if (t == 3)
        a[past] = 1;
    }
    out = a[7];
  }
  printf("out = %d\n", out);
  return 0;
}
