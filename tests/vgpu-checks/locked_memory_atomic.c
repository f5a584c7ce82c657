// An atomic update of page-locked host memory (llvm_omp_target_lock_mem, what libomp calls for
// omp_alloc with the pinned trait) through the address the runtime gives the device. As with
// pinned allocations, a GPU reaches that memory over PCIe, which carries no atomics to host
// memory; the virtual GPU names the atomic and where it is.
// CFLAGS: -g
// EXPECT: abort
// EXPECT-STDERR: does an atomic read-modify-write at 0x
// EXPECT-STDERR: in host memory
// EXPECT-STDERR: locked_memory_atomic.c:23:
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
void *llvm_omp_target_lock_mem(void *ptr, size_t size, int device);
void llvm_omp_target_unlock_mem(void *ptr, int device);
int main(void) {
  int device = omp_get_default_device();
  int *counter = malloc(4096);
  *counter = 0;
  int *on_device = llvm_omp_target_lock_mem(counter, 4096, device);
#pragma omp target teams distribute parallel for is_device_ptr(on_device)
  for (int i = 0; i < 64; ++i) {
#pragma omp atomic
    *on_device += 1;
  }
  llvm_omp_target_unlock_mem(counter, device);
  printf("counter = %d\n", *counter);
  free(counter);
  return 0;
}
