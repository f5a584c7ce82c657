// EXPECT: abort
// A failing assert() inside a target region must stop the program with a non-zero status (not
// hang, not be ignored): the device reports the assertion (file, line, expression) and the
// program ends. The expression depends on a run-time value, so it is not folded. If the program
// gets past the region, the assertion was ignored: it says so and exits 0, which the runner
// counts as a failure of this expected-failure program.
// On the CPU plugin the x86_64 image calls glibc's __assert_fail itself: it prints
// "prog: file:line: main: Assertion `x == 42 && "device check"' failed." and calls abort(), so
// the process ends with SIGABRT, which EXPECT: abort accepts (any other signal, a hang or exit 0
// is a failure). GPUs print the message from the device and trap; the launch fails and the
// program exits non-zero.
#undef NDEBUG
#include <assert.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  (void)argv;
  int x = 41 + (argc > 100); // 41: the assertion fails
  int ondev = 0, reached = 0;
#pragma omp target map(tofrom: ondev, reached) firstprivate(x)
  {
    ondev = !omp_is_initial_device();
    if (ondev) assert(x == 42 && "device check");
    reached = 1;
  }
  if (!ondev) {
    fprintf(stderr, "target region ran on the host\n");
    return 1;
  }
  fprintf(stderr, "failed device assert was ignored (reached %d)\n", reached);
  return 0;
}
