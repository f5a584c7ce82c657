// LLVM-REF: fails (LLVM 22 never counts a reference for the first component a mapper reports, so the struct entry of every mapper-mapped object stays mapped forever)
// A struct mapped through a user-defined mapper is unmapped when its last reference goes, like
// any list item: after the region (and after enter/exit data) nothing of it stays mapped, so a
// later, larger object at the same stack address maps cleanly.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

typedef struct { int n; double *data; } DVec;
#pragma omp declare mapper(DVec v) map(v, v.data[0:v.n])

static __attribute__((noinline)) void use_vec(int dev, double *storage) {
  DVec v = {8, storage};
  for (int i = 0; i < v.n; i++) v.data[i] = i;
#pragma omp target map(tofrom: v)
  for (int i = 0; i < v.n; i++) v.data[i] += 1;
  if (omp_target_is_present(&v, dev)) FAIL("struct still mapped after its region");
  if (omp_target_is_present(v.data, dev)) FAIL("pointee still mapped after its region");
#pragma omp target enter data map(to: v)
  if (!omp_target_is_present(&v, dev) || !omp_target_is_present(v.data, dev)) FAIL("enter data did not map");
#pragma omp target exit data map(release: v)
  if (omp_target_is_present(&v, dev)) FAIL("struct still mapped after exit data");
  for (int i = 0; i < v.n; i++)
    if (v.data[i] != i + 1) FAIL("v.data[%d]=%g", i, v.data[i]);
}

static __attribute__((noinline)) void use_buffer(int dev) {
  char buffer[512]; // covers the stack slot the struct had
  for (int i = 0; i < 512; i++) buffer[i] = (char)i;
#pragma omp target map(tofrom: buffer)
  for (int i = 0; i < 512; i++) buffer[i] = (char)(buffer[i] + 1);
  for (int i = 0; i < 512; i++)
    if (buffer[i] != (char)(i + 1)) FAIL("buffer[%d]=%d", i, buffer[i]);
  if (omp_target_is_present(buffer, dev)) FAIL("buffer still mapped");
}

int main(void) {
  int dev = omp_get_default_device();
  double *storage = malloc(8 * sizeof(double));
  use_vec(dev, storage);
  use_buffer(dev);
  free(storage);
  return 0;
}
