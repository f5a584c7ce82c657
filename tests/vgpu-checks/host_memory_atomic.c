// An atomic update of pinned host memory (llvm_omp_target_alloc_host) from device code. A GPU
// reaches that memory over PCIe, which carries no atomic operations to host memory: the
// update hangs or is lost (the device runtime's first host-call port did a compare-exchange on
// host memory and hung the H200, corpus 131). The virtual GPU, whose host memory is the host's
// own, names the atomic and where it is.
// CFLAGS: -g
// EXPECT: abort
// EXPECT-STDERR: does an atomic read-modify-write at 0x
// EXPECT-STDERR: in host memory
// EXPECT-STDERR: host_memory_atomic.c:21:
#include <omp.h>
#include <stdio.h>
void *llvm_omp_target_alloc_host(size_t bytes, int device);
int main(void) {
  int device = omp_get_default_device();
  int *counter = llvm_omp_target_alloc_host(sizeof(int), device);
  *counter = 0;
#pragma omp target teams distribute parallel for is_device_ptr(counter)
  for (int i = 0; i < 64; ++i) {
#pragma omp atomic
    *counter += 1;
  }
  printf("counter = %d\n", *counter);
  return 0;
}
