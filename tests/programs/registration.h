// Registration structures and entry points of LLVM 22's libomptarget ABI, for the programs
// that register a library by hand (bad-input tests). Not a test itself: the runner compiles
// only .c and .cpp files.
#ifndef RUSTOMP_TEST_REGISTRATION_H
#define RUSTOMP_TEST_REGISTRATION_H
#include <stdint.h>

struct offload_entry {
  uint64_t reserved;
  uint16_t version, kind;
  uint32_t flags;
  void *address;
  const char *symbol_name;
  uint64_t size, data;
  void *aux;
};
struct device_image {
  void *start, *end;
  struct offload_entry *entries_begin, *entries_end;
};
struct bin_desc {
  int32_t num_images;
  struct device_image *images;
  struct offload_entry *entries_begin, *entries_end;
};
struct kernel_args {
  uint32_t version, num_args;
  void **bases, **begins;
  int64_t *sizes, *types;
  void **names, **mappers;
  uint64_t tripcount, flags;
  uint32_t num_teams[3], thread_limit[3], dyn_mem;
};
void __tgt_register_lib(struct bin_desc *);
void __tgt_unregister_lib(struct bin_desc *);
int __tgt_target_kernel(void *loc, int64_t device, int32_t teams, int32_t threads, void *region, struct kernel_args *);

#ifndef RUSTOMP_REGISTRATION_TYPES_ONLY
#include <stddef.h>
#include <string.h>
/// Registers a library of one image, [start, end), whose only entry is the kernel `name` for
/// `region`; launches that kernel on device 0 with one team of one thread; unregisters the
/// library; returns what __tgt_target_kernel returned.
static inline int register_and_launch(void *start, void *end, const char *name, void *region) {
  struct offload_entry entry = {0, 1, 1, 0, region, name, 0, 0, NULL};
  struct device_image img = {start, end, &entry, &entry + 1};
  struct bin_desc desc = {1, &img, &entry, &entry + 1};
  __tgt_register_lib(&desc);
  struct kernel_args args;
  memset(&args, 0, sizeof args);
  args.version = 3;
  args.num_teams[0] = 1;
  args.thread_limit[0] = 1;
  int rc = __tgt_target_kernel(NULL, 0, 1, 1, region, &args);
  __tgt_unregister_lib(&desc);
  return rc;
}
#endif

#endif
