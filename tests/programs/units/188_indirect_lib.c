// The shared library of 188_indirect_shared_library.c: built with its own offload image
// (`// SHARED:`), registered by its own constructor, loaded on the device beside the program's.
#include <omp.h>

int lib_calls = 0;
#pragma omp declare target to(lib_calls)

#pragma omp begin declare target indirect
int lib_triple(int x) {
#pragma omp atomic
  lib_calls++;
  return 3 * x + 1000 * omp_is_initial_device();
}
int lib_negate(int x) {
#pragma omp atomic
  lib_calls++;
  return -x + 1000 * omp_is_initial_device();
}
#pragma omp end declare target

typedef int (*fn_t)(int);

void lib_functions(fn_t out[2]) {
  out[0] = lib_triple;
  out[1] = lib_negate;
}

// A region of the library calling a pointer it is given (the program's function, or its own).
int lib_apply(fn_t f, int x) {
  int r = -1;
#pragma omp target firstprivate(f, x) map(from: r)
  r = f(x);
  return r;
}

// The device's count of calls of the library's functions.
int lib_device_calls(void) {
#pragma omp target update from(lib_calls)
  return lib_calls;
}
