// EXPECT-STDERR-BOTH: omptarget error: Trying to disassociate a pointer with a non-zero hold reference count
// EXPECT-STDERR-BOTH: omptarget error: Trying to disassociate a pointer which was not mapped via omp_target_associate_ptr
// EXPECT-STDERR-BOTH: omptarget error: Association not found
// omp_target_disassociate_ptr refuses, with LLVM's messages and a non-zero result, to remove
// (1) an association while an ompx_hold map of it is active, (2) a mapping made by a map
// clause rather than by omp_target_associate_ptr, (3) a pointer with no mapping at all (also
// one whose association was already removed). Each refusal leaves the table as it was; once
// the hold is gone the association is removed (result 0).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  int dev = omp_get_default_device();
  if (omp_get_num_devices() < 1) FAIL("no device");
  int x = 1, z[4] = {0, 1, 2, 3}, w = 0;
  void *d = omp_target_alloc(sizeof x, dev);
  if (!d) FAIL("omp_target_alloc failed");
  if (omp_target_associate_ptr(&x, d, sizeof x, 0, dev) != 0) FAIL("associate failed");

  // (1) the association is held by ompx_hold: not removed
#pragma omp target data map(ompx_hold, tofrom: x)
  {
    if (omp_target_disassociate_ptr(&x, dev) == 0) FAIL("disassociate succeeded while a hold reference is active");
    if (!omp_target_is_present(&x, dev)) FAIL("refused disassociate removed the mapping");
    if (omp_get_mapped_ptr(&x, dev) != d) FAIL("refused disassociate changed the device address");
  }
  if (!omp_target_is_present(&x, dev)) FAIL("association gone after the hold ended");
  if (omp_target_disassociate_ptr(&x, dev) != 0) FAIL("disassociate failed after the hold ended");
  if (omp_target_is_present(&x, dev)) FAIL("x still present after disassociate");

  // (2) mapped by a map clause, not associated
#pragma omp target enter data map(to: z)
  if (omp_target_disassociate_ptr(z, dev) == 0) FAIL("disassociate of a map-clause mapping succeeded");
  if (!omp_target_is_present(z, dev)) FAIL("refused disassociate removed the map-clause mapping");
#pragma omp target exit data map(delete: z)
  if (omp_target_is_present(z, dev)) FAIL("z still present after exit data");

  // (3) nothing mapped there, and an association already removed
  if (omp_target_disassociate_ptr(&w, dev) == 0) FAIL("disassociate of an unmapped pointer succeeded");
  if (omp_target_disassociate_ptr(&x, dev) == 0) FAIL("second disassociate of x succeeded");

  omp_target_free(d, dev);
  return 0;
}
