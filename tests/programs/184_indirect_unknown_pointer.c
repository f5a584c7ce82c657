// LLVM-REF: fails (LLVM's libomptarget binds no __kmpc_target_translate_fptr for host-offload images)
// The translation's contract for a pointer that is not 'declare target indirect': it comes back
// unchanged (calling it on the device is the program's error, so this program never does).
// A 'declare target indirect' function's pointer comes back as the device's address, which is
// not the host's (each device loads its own copy of the image), and as the same address
// &function has on the device. The program declares the translation weak: it is bound for
// every image that calls it (device runtime on GPUs, CPU plugin for host offload).
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

#pragma omp begin declare target
void *__kmpc_target_translate_fptr(void *fn) __attribute__((weak));
#pragma omp end declare target

#pragma omp begin declare target indirect
int known(int x) { return x + 1; }
#pragma omp end declare target

int host_only(int x) { return x - 1; } // not declare target: no device version

typedef int (*fn_t)(int);

int main(void) {
  fn_t unknown = host_only, k = known;
  uintptr_t unknown_back = 0, known_back = 0, known_device = 0;
  int bound = 0, init = -1;
#pragma omp target firstprivate(unknown, k) map(from: unknown_back, known_back, known_device, bound, init)
  {
    init = omp_is_initial_device();
    bound = __kmpc_target_translate_fptr != 0;
    if (bound) {
      unknown_back = (uintptr_t)__kmpc_target_translate_fptr((void *)unknown);
      known_back = (uintptr_t)__kmpc_target_translate_fptr((void *)k);
      known_device = (uintptr_t)&known;
    }
  }
  if (init != 0) FAIL("region ran on the host");
  if (!bound) FAIL("__kmpc_target_translate_fptr is not bound in the device image");
  if (unknown_back != (uintptr_t)host_only) FAIL("a pointer that is not declare target indirect changed: %#lx -> %#lx", (unsigned long)(uintptr_t)host_only, (unsigned long)unknown_back);
  if (known_back == (uintptr_t)known) FAIL("the host address of a declare target indirect function came back untranslated");
  if (known_back != known_device) FAIL("translated %#lx, but the device's &known is %#lx", (unsigned long)known_back, (unsigned long)known_device);
  // Null stays null.
  uintptr_t null_back = 1;
#pragma omp target map(from: null_back)
  null_back = __kmpc_target_translate_fptr ? (uintptr_t)__kmpc_target_translate_fptr(0) : 1;
  if (null_back != 0) FAIL("null translated to %#lx", (unsigned long)null_back);
  return 0;
}
