// declare target indirect, looked up by hand: clang-22 emits no translation for a call through a
// host function pointer, so the device code calls __llvm_omp_indirect_call_lookup itself.
// Generic-mode target region (one thread). The lookup is a GPU runtime entry point: the host
// fallback (and host offload) calls the pointer directly. Exits 0 when both calls give the expected values.
#include <stdio.h>

#pragma omp begin declare target indirect
int add1(int x) { return x + 1; }
int mul2(int x) { return x * 2; }
#pragma omp end declare target

#pragma omp declare target
void *__llvm_omp_indirect_call_lookup(void *host_ptr);
#pragma omp end declare target

typedef int (*fn_t)(int);

int main(void) {
  fn_t fns[2] = {add1, mul2};
  int expect[2] = {21, 40};
  int failed = 0;
  for (int k = 0; k < 2; k++) {
    fn_t f = fns[k];
    int out = -1;
#pragma omp target map(from: out) firstprivate(f)
    {
#if defined(__NVPTX__) || defined(__AMDGCN__)
      fn_t dev = (fn_t)__llvm_omp_indirect_call_lookup((void *)f);
#else
      fn_t dev = f; // host fallback or host offload: host and device addresses coincide
#endif
      out = dev(20);
    }
    printf("fns[%d](20) = %d (expected %d)\n", k, out, expect[k]);
    failed |= out != expect[k];
  }
  return failed;
}
