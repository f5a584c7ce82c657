// '#pragma omp interop init(targetsync: obj) depend(in: x)' waits for the sibling task that
// writes x (depend(out: x)) before it returns, even when the device offers no interop object
// (the host plugin: obj is omp_interop_none). The writer sleeps 200 ms first, on the other
// thread of the team, so not waiting would leave x == 0.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  if (omp_get_num_devices() < 1) FAIL("no device");
  int x = 0, seen = -1, threads = 0;
  omp_interop_t obj = omp_interop_none;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
    threads = omp_get_num_threads();
#pragma omp task depend(out: x) shared(x)
    {
      usleep(200000);
      x = 1;
    }
#pragma omp interop init(targetsync: obj) depend(in: x)
    seen = x;
  }
  if (threads != 2) FAIL("team of %d threads", threads);
  if (seen != 1) FAIL("interop init with depend(in: x) did not wait for the writer task (x=%d)", seen);
  if (obj != omp_interop_none) {
#pragma omp interop destroy(obj)
  }
  return 0;
}
