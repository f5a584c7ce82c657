// LLVM-REF: fails (LLVM 22 does not wait for depend lists of interop use/destroy on omp_interop_none)
// '#pragma omp interop use(obj) depend(in: x)' and 'interop destroy(obj) depend(in: x)' wait
// for the sibling task that writes x before they return, whatever object init produced
// (omp_interop_none on the host plugin). Each writer sleeps 200 ms first, on the other thread
// of the team, so not waiting would leave the previous value of x.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  if (omp_get_num_devices() < 1) FAIL("no device");
  int x = 0, after_use = -1, after_destroy = -1, threads = 0;
  omp_interop_t obj = omp_interop_none;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
    threads = omp_get_num_threads();
#pragma omp interop init(targetsync: obj)
#pragma omp task depend(out: x) shared(x)
    {
      usleep(200000);
      x = 1;
    }
#pragma omp interop use(obj) depend(in: x)
    after_use = x;
#pragma omp task depend(out: x) shared(x)
    {
      usleep(200000);
      x = 2;
    }
#pragma omp interop destroy(obj) depend(in: x)
    after_destroy = x;
  }
  if (threads != 2) FAIL("team of %d threads", threads);
  if (after_use != 1 || after_destroy != 2)
    FAIL("interop use/destroy with depend(in: x) did not wait for the writer task (x=%d after use, expected 1; x=%d after destroy, expected 2)",
         after_use, after_destroy);
  return 0;
}
