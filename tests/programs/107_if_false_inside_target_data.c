// target if(0) inside target data: the region runs on the host and sees the host copies (not
// the device ones); use_device_ptr/addr do not change what an if(0) region sees; target data
// if(0) maps nothing; and target update/enter/exit data with if(0) do nothing.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 16

int main(void) {
  int dev = omp_get_default_device();
  int a[N], *p = malloc(N * sizeof(int));
  for (int i = 0; i < N; i++) { a[i] = i; p[i] = 10 * i; }
  int zero = 0;
#pragma omp target data map(to: a, p[0:N])
  {
    for (int i = 0; i < N; i++) { a[i] = -1; p[i] = -2; } // device keeps old values
    int on_host = 0, sa = 0, sp = 0;
    long addr = 0;
#pragma omp target if(zero) map(tofrom: a, p[0:N]) map(from: on_host, sa, sp, addr)
    {
      on_host = omp_is_initial_device();
      addr = (long)p;
      for (int i = 0; i < N; i++) { sa += a[i]; sp += p[i]; }
      a[0] = 555;
      p[0] = 666;
    }
    if (!on_host) FAIL("target if(0) ran on the device");
    if ((int *)addr != p) FAIL("target if(0): p is %p inside, host p is %p", (void *)addr, (void *)p);
    if (sa != -N || sp != -2 * N) FAIL("target if(0) saw device data: sa=%d sp=%d", sa, sp);
    if (a[0] != 555 || p[0] != 666) FAIL("target if(0) writes lost: a[0]=%d p[0]=%d", a[0], p[0]);
    // device copies untouched by the host-fallback region
    int da = 0, dp = 0;
#pragma omp target map(from: da, dp)
    { da = a[0] + a[3]; dp = p[0] + p[3]; }
    if (da != 3 || dp != 30) FAIL("device copies changed by target if(0): %d %d", da, dp);
    // target teams distribute parallel for if(0)
    int cnt = 0;
#pragma omp target teams distribute parallel for if(target: zero) reduction(+: cnt) map(tofrom: a)
    for (int i = 0; i < N; i++) cnt += (a[i] == -1) + (omp_is_initial_device() ? 100 : 0);
    if (cnt != (N - 1) + 100 * N) FAIL("combined if(target: 0) region: cnt=%d", cnt);
    // if(0) on update/enter/exit data: no effect
    a[5] = 55;
#pragma omp target update to(a) if(zero)
#pragma omp target exit data map(delete: a) if(zero)
    if (!omp_target_is_present(a, dev)) FAIL("exit data if(0) removed a");
#pragma omp target map(from: da)
    da = a[5];
    if (da != 5) FAIL("update to if(0) transferred: device a[5]=%d", da);
  }
  // target data if(0): nothing mapped inside
  int b[4] = {1, 2, 3, 4};
#pragma omp target data map(to: b) if(zero)
  {
    if (omp_target_is_present(b, dev)) FAIL("target data if(0) mapped b");
#pragma omp target enter data map(to: b) if(zero)
    if (omp_target_is_present(b, dev)) FAIL("enter data if(0) mapped b");
  }
  free(p);
  return 0;
}
