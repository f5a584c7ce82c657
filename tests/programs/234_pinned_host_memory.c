// Host memory pinned for the device: with the pinned trait on the default allocator
// (OMP_ALLOCATOR below), libomp's omp_alloc locks each allocation for the default device
// through llvm_omp_target_lock_mem and unlocks it in omp_free; a program may also call the
// pair itself, nested and on parts of a locked range. Copies of locked memory (4 MiB, above
// the size a GPU plugin stages through its own pinned buffers) must carry the data both ways,
// by map and by target update.
// ENV: OMP_ALLOCATOR=omp_default_mem_space:pinned=true
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

void *llvm_omp_target_lock_mem(void *ptr, size_t size, int device_num);
void llvm_omp_target_unlock_mem(void *ptr, int device_num);

#define N (1 << 20) // ints: 4 MiB

static void check(const int *a, int expect_base, const char *what) {
  for (int i = 0; i < N; i++)
    if (a[i] != expect_base + i) FAIL("%s: a[%d] = %d, expected %d", what, i, a[i], expect_base + i);
}

static void add_on_device(int *a, int by) {
#pragma omp target map(tofrom: a[0:N])
#pragma omp teams distribute parallel for
  for (int i = 0; i < N; i++) a[i] += by;
}

int main(void) {
  int dev = omp_get_default_device();

  // 1. The default allocator has the pinned trait: omp_alloc locks, omp_free unlocks.
  int *a = omp_alloc(N * sizeof(int), omp_null_allocator);
  if (!a) FAIL("omp_alloc with the pinned trait returned NULL");
  for (int i = 0; i < N; i++) a[i] = i;
  add_on_device(a, 5);
  check(a, 5, "pinned omp_alloc, map tofrom");
#pragma omp target enter data map(alloc: a[0:N])
#pragma omp target update to(a[0:N])
#pragma omp target teams distribute parallel for
  for (int i = 0; i < N; i++) a[i] *= 2;
#pragma omp target update from(a[0:N])
#pragma omp target exit data map(delete: a[0:N])
  for (int i = 0; i < N; i++)
    if (a[i] != 2 * (5 + i)) FAIL("pinned omp_alloc, target update: a[%d] = %d", i, a[i]);
  omp_free(a, omp_null_allocator);

  // 2. The program locks memory itself: the whole buffer, then a part of it again.
  int *b = malloc(N * sizeof(int));
  if (!b) FAIL("malloc failed");
  for (int i = 0; i < N; i++) b[i] = i;
  void *locked = llvm_omp_target_lock_mem(b, N * sizeof(int), dev);
  if (!locked) FAIL("llvm_omp_target_lock_mem(%p, %zu, %d) returned NULL", (void *)b, N * sizeof(int), dev);
  void *part = llvm_omp_target_lock_mem(b + 1024, 4096, dev);
  if (!part) FAIL("locking a part of a locked range returned NULL");
  add_on_device(b, 3);
  check(b, 3, "locked malloc memory, map tofrom");
  llvm_omp_target_unlock_mem(b + 1024, dev);
  add_on_device(b, 4);
  check(b, 7, "after one of two unlocks");
  llvm_omp_target_unlock_mem(b, dev);
  add_on_device(b, 1);
  check(b, 8, "unlocked again");
  free(b);
  printf("pinned host memory: ok\n");
  return 0;
}
