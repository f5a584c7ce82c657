// HOST-ONLY: checks the CPU plugin's allocation accounting (RUSTOMP_HOST_LEAK_CHECK); on a GPU it is only slow
// ENV: RUSTOMP_HOST_LEAK_CHECK=1
// EXPECT-STDERR: rustomp host plugin: device 0: 0 allocations (0 bytes) outstanding
// 16 host threads x 10 000 target regions over overlapping maps of one device: a shared array
// every region maps (its entry is created and removed over and over, by whichever thread comes
// first and last), sections of an array mapped once for all, and each thread's own row (tofrom,
// incremented by every region). Each region reads the shared data it mapped and checks it: a
// thread that saw an entry before its data arrived (or one half-way through removal) reads
// another thread's stale or freed copy. Results are exact and the table is empty at the end.
#include <omp.h>
#include <stdio.h>

#define THREADS 16
#define REGIONS 10000
#define N 2048
#define ROW 256
#define SECTION 64

static int shared_data[N];
static int persistent[N];
static int rows[THREADS][ROW];

int main(void) {
  for (int i = 0; i < N; i++) {
    shared_data[i] = 3 * i + 1;
    persistent[i] = 7 * i + 5;
  }
  #pragma omp target enter data map(to: persistent[0:N])
  long wrong = 0, on_host = 0;
  #pragma omp parallel num_threads(THREADS) reduction(+: wrong, on_host)
  {
    int t = omp_get_thread_num();
    int *row = rows[t];
    for (int r = 0; r < REGIONS; r++) {
      int k = (r * 37 + t * 101) % (N - SECTION);
      int seen[3];
      int host = 1;
      #pragma omp target map(to: shared_data[0:N], persistent[k:SECTION]) map(tofrom: row[0:ROW]) \
          map(from: seen[0:3], host)
      {
        host = omp_is_initial_device();
        for (int j = 0; j < ROW; j++) row[j] += 1;
        seen[0] = shared_data[(r + t) % N];
        seen[1] = shared_data[N - 1 - (r % 64)];
        seen[2] = persistent[k + r % SECTION];
      }
      on_host += host;
      wrong += seen[0] != 3 * ((r + t) % N) + 1;
      wrong += seen[1] != 3 * (N - 1 - (r % 64)) + 1;
      wrong += seen[2] != 7 * (k + r % SECTION) + 5;
    }
  }
  #pragma omp target exit data map(delete: persistent[0:N])
  for (int t = 0; t < THREADS; t++)
    for (int j = 0; j < ROW; j++)
      wrong += rows[t][j] != REGIONS;
  int dev = omp_get_default_device();
  int left = omp_target_is_present(shared_data, dev) + omp_target_is_present(persistent, dev);
  for (int t = 0; t < THREADS; t++) left += omp_target_is_present(rows[t], dev);
  if (wrong || on_host || left) {
    fprintf(stderr, "concurrent mapping: %ld wrong values, %ld regions on the host, %d entries left\n", wrong, on_host, left);
    return 1;
  }
  return 0;
}
