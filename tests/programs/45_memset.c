// omp_target_memset and omp_target_memset_async (OpenMP 6.0 / LLVM).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 1000

int main(void) {
  int offdev = 0;
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  unsigned char *d = omp_target_alloc(N, dev);
  unsigned char h[N];
  if (!d) FAIL("alloc failed");
  if (omp_target_memset(d, 0xAB, N, dev) != d) FAIL("omp_target_memset did not return dst");
  if (omp_target_memset(d + 100, 0x11, 50, dev) != d + 100) FAIL("memset at offset did not return dst");
  int bad = 0;
#pragma omp target is_device_ptr(d) map(tofrom: bad) map(tofrom: offdev)
  {
    offdev |= omp_is_initial_device();
    for (int i = 0; i < N; i++) {
      unsigned char want = (i >= 100 && i < 150) ? 0x11 : 0xAB;
      if (d[i] != want) bad++;
    }
  }
  if (offdev) FAIL("target region ran on the host");
  if (bad) FAIL("device saw %d wrong bytes after memset", bad);
  // async memset with dependence, then dependent async copy back
  int tok = 0;
  omp_depend_t dep;
#pragma omp depobj(dep) depend(inout: tok)
  if (omp_target_memset_async(d, 0x5C, N / 2, dev, 1, &dep) != d) FAIL("memset_async did not return dst");
  memset(h, 0, N);
  if (omp_target_memcpy_async(h, d, N, 0, 0, host, dev, 1, &dep)) FAIL("memcpy_async failed");
#pragma omp taskwait
  for (int i = 0; i < N; i++) {
    unsigned char want = i < N / 2 ? 0x5C : ((i >= 100 && i < 150) ? 0x11 : 0xAB);
    if (h[i] != want) FAIL("byte %d = 0x%02x expected 0x%02x", i, h[i], want);
  }
  // memset on the host device works on host memory
  if (omp_target_memset(h, 7, 10, host) != h || h[9] != 7 || h[10] == 7) FAIL("host memset wrong");
  // zero-size memset is a no-op
  omp_target_memset(d, 0, 0, dev);
#pragma omp depobj(dep) destroy
  omp_target_free(d, dev);
  return 0;
}
