// ENV: LIBOMPTARGET_INFO=8
// CFLAGS: -g
// EXPECT-STDERR-BOTH: omptarget device 0 info: Creating new map entry with HstPtrBase=0x
// EXPECT-STDERR-BOTH: , Size=4, DynRefCount=1, HoldRefCount=0, Name=x
// EXPECT-STDERR-BOTH: omptarget device 0 info: Removing map entry with HstPtrBegin=0x
// EXPECT-STDERR-BOTH: , Size=4, Name=x
// LIBOMPTARGET_INFO=8 (mapping table changes): enter data creates the entry for x (reference
// counts 1 and 0, the variable's name), exit data removes it.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(void) {
  if (omp_get_num_devices() < 1) FAIL("no device");
  int x = 7;
#pragma omp target enter data map(to: x) device(0)
  if (!omp_target_is_present(&x, 0)) FAIL("x not mapped by enter data");
#pragma omp target exit data map(from: x) device(0)
  if (omp_target_is_present(&x, 0)) FAIL("x still mapped after exit data");
  if (x != 7) FAIL("x=%d", x);
  return 0;
}
