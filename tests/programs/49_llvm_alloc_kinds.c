// LLVM extensions: llvm_omp_target_alloc_{host,shared,device} and their frees.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 512

void *llvm_omp_target_alloc_device(size_t, int);
void *llvm_omp_target_alloc_host(size_t, int);
void *llvm_omp_target_alloc_shared(size_t, int);
void llvm_omp_target_free_device(void *, int);
void llvm_omp_target_free_host(void *, int);
void llvm_omp_target_free_shared(void *, int);

int main(void) {
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  int *dd = llvm_omp_target_alloc_device(N * sizeof(int), dev);
  int *hh = llvm_omp_target_alloc_host(N * sizeof(int), dev);
  int *ss = llvm_omp_target_alloc_shared(N * sizeof(int), dev);
  if (!dd || !hh || !ss) FAIL("allocation failed: dev=%p host=%p shared=%p", (void *)dd, (void *)hh, (void *)ss);
  // host and shared memory are directly accessible by the host
  for (int i = 0; i < N; i++) { hh[i] = i; ss[i] = 2 * i; }
  int init = -1;
  // and by the device
#pragma omp target is_device_ptr(dd, hh, ss) map(from: init)
  {
    init = omp_is_initial_device();
    for (int i = 0; i < N; i++) {
      dd[i] = hh[i] + ss[i];
      ss[i] += 1;
    }
  }
  if (init != 0) FAIL("region ran on host");
  for (int i = 0; i < N; i++)
    if (ss[i] != 2 * i + 1) FAIL("shared memory write not visible on host: ss[%d]=%d", i, ss[i]);
  int r[N];
  if (omp_target_memcpy(r, dd, sizeof r, 0, 0, host, dev)) FAIL("memcpy from device alloc failed");
  for (int i = 0; i < N; i++)
    if (r[i] != 3 * i) FAIL("device alloc r[%d]=%d", i, r[i]);
  llvm_omp_target_free_device(dd, dev);
  llvm_omp_target_free_host(hh, dev);
  llvm_omp_target_free_shared(ss, dev);
  // omp_alloc with the LLVM target allocators
  int *ha = omp_alloc(N * sizeof(int), llvm_omp_target_host_mem_alloc);
  if (!ha) FAIL("omp_alloc(llvm_omp_target_host_mem_alloc) failed");
  for (int i = 0; i < N; i++) ha[i] = i;
  omp_free(ha, llvm_omp_target_host_mem_alloc);
  return 0;
}
