// LLVM-REF: fails (LLVM 22's libomptarget exports no __llvm_omp_host_call for host-offload images: the device link fails)
// ENV: KMP_TEAMS_THREAD_LIMIT=16
// ENV: OMP_NUM_THREADS=8
// Device code calls host functions with __llvm_omp_host_call(fn, data, size): the host runs
// fn(copy of data) and the device gets its 64-bit result (GPU: through the plugin's port).
#include <omp.h>
#include <stdint.h>
#include <stdio.h>

uint64_t __llvm_omp_host_call(void *fn, void *data, size_t size);

struct request {
  int64_t a, b;
  int32_t team, thread;
};

static int64_t host_calls;

uint64_t host_sum(void *data) {
  struct request *r = data;
  __atomic_fetch_add(&host_calls, 1, __ATOMIC_RELAXED);
  return (uint64_t)(r->a + r->b + 1000 * r->team + r->thread);
}

int main(void) {
  enum { TEAMS = 2, THREADS = 8 };
  uint64_t got[TEAMS * THREADS] = {0};
  void *fn = (void *)host_sum;
  int on_device = 0;
#pragma omp target teams num_teams(TEAMS) thread_limit(THREADS) map(tofrom : got, on_device) firstprivate(fn)
#pragma omp parallel num_threads(THREADS)
  {
    if (omp_get_team_num() == 0 && omp_get_thread_num() == 0)
      on_device = !omp_is_initial_device();
    struct request r = {40, 2, omp_get_team_num(), omp_get_thread_num()};
    got[omp_get_team_num() * THREADS + omp_get_thread_num()] =
        __llvm_omp_host_call(fn, &r, sizeof r);
  }
  if (!on_device) {
    fprintf(stderr, "the region did not run on a device\n");
    return 1;
  }
  int seen = 0;
  for (int t = 0; t < TEAMS; t++)
    for (int i = 0; i < THREADS; i++) {
      uint64_t want = 42 + 1000 * t + i;
      uint64_t value = got[t * THREADS + i];
      if (value == 0)
        continue; // a team or thread the CPU plugin did not form
      seen++;
      if (value != want) {
        fprintf(stderr, "team %d thread %d: host call returned %llu, expected %llu\n", t, i,
                (unsigned long long)value, (unsigned long long)want);
        return 1;
      }
    }
  if (seen == 0 || host_calls != seen) {
    fprintf(stderr, "%d results but %lld host calls\n", seen, (long long)host_calls);
    return 1;
  }
  return 0;
}
