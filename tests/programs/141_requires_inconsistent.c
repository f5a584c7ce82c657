// EXPECT: abort
// EXPECT-STDERR-BOTH: omptarget fatal error 2: '#pragma omp requires dynamic_allocators' not used consistently!
// Two libraries registered by hand carry the requires entries clang emits for
// '#pragma omp requires' (flags 0x10 = register-requires, data = the requires flags): the first
// unified_shared_memory (0x8), the second unified_shared_memory + dynamic_allocators (0x18).
// The clauses differ between the units, so LLVM's runtime reports fatal error 2 naming
// dynamic_allocators and aborts when the second library is registered.
// (This file has no target construct, so clang registers no library of its own.)
#include <stdint.h>
#include <stdio.h>

#define RUSTOMP_REGISTRATION_TYPES_ONLY
#include "registration.h"

static struct offload_entry req_usm = {0, 1, 1, 0x10, NULL, ".requires", 0, 0x8, NULL};
static struct offload_entry req_usm_dyn = {0, 1, 1, 0x10, NULL, ".requires", 0, 0x18, NULL};
static struct bin_desc lib_a = {0, NULL, &req_usm, &req_usm + 1};
static struct bin_desc lib_b = {0, NULL, &req_usm_dyn, &req_usm_dyn + 1};

int main(void) {
  __tgt_register_lib(&lib_a);
  __tgt_register_lib(&lib_b);
  // Reaching this point means the inconsistency was accepted.
  fprintf(stderr, "inconsistent requires clauses (0x8, then 0x18) were accepted\n");
  __tgt_unregister_lib(&lib_b);
  __tgt_unregister_lib(&lib_a);
  return 0;
}
