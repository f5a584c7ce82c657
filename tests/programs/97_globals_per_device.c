// Each device has its own copy of a declare-target global: what a region on device d writes
// is seen by later regions on device d only, and the host copy changes only by target update.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int counter = 0;
int history[8];
#pragma omp declare target to(counter, history)

int main(void) {
  int nd = omp_get_num_devices();
  if (nd < 1) FAIL("no devices");
  if (nd > 8) nd = 8;
  for (int round = 0; round < 3; round++)
    for (int d = 0; d < nd; d++) {
      int init = -1;
#pragma omp target device(d) map(from: init)
      {
        init = omp_is_initial_device();
        counter += d + 1;
        history[round] = counter;
      }
      if (init != 0) FAIL("device(%d): region ran on the host", d);
    }
  if (counter != 0) FAIL("host copy of counter changed to %d", counter);
  for (int d = 0; d < nd; d++) {
    int got = -1, last = -1;
#pragma omp target device(d) map(from: got, last)
    { got = counter; last = history[2]; }
    if (got != 3 * (d + 1)) FAIL("device %d: counter=%d expected %d (device copies shared?)", d, got, 3 * (d + 1));
    if (last != got) FAIL("device %d: history[2]=%d expected %d", d, last, got);
  }
#pragma omp target update from(counter) device(nd - 1)
  if (counter != 3 * nd) FAIL("update from device %d: counter=%d expected %d", nd - 1, counter, 3 * nd);
  return 0;
}
