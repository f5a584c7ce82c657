// EXPECT: abort
// EXPECT-STDERR: was not present on the device upon entry to the region
// LLVM-REF: fails (LLVM 22 checks 'present' after earlier entries of the same construct mapped the item)
// One target construct names x in three map clauses: alloc, present+alloc and tofrom. x is not
// mapped before the construct, so the 'present' clause fails: presence is judged on the state
// upon entry to the region, not after the construct's other clauses created the mapping. The
// program must end with the runtime's error; getting past the region counts as a failure.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int x = 111;
  if (omp_get_num_devices() < 1) {
    fprintf(stderr, "no device\n");
    return 0; // exit 0 counts as a failure of this program
  }
#pragma omp target map(alloc: x) map(present, alloc: x) map(tofrom: x)
  { x++; }
  // Reaching this point means the present check saw the mapping made by the same construct.
  fprintf(stderr, "map(present) of x not mapped before the construct did not fail (x=%d)\n", x);
  return 0;
}
