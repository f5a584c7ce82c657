// EXPECT: fail
// EXPECT-STDERR: corrupted offload binary
// A registered image whose offload-binary container (magic 0x10FF10AD) has entry offsets
// beyond its end: registration reports the corrupted container, and a launch of its kernel
// ends the program naming the device, instead of reading past the image.
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "registration.h"

static char region_id;
static uint64_t container[32]; // 8-byte aligned, as the container requires

int main(void) {
  memset(container, 0xEE, sizeof container);
  unsigned char *bytes = (unsigned char *)container;
  memcpy(bytes, "\x10\xff\x10\xad", 4);   // OffloadBinary magic
  uint32_t version = 1;
  uint64_t size = sizeof container;
  uint64_t entry_offset = 1u << 20;        // far past the end of the 256-byte container
  memcpy(bytes + 4, &version, 4);
  memcpy(bytes + 8, &size, 8);
  memcpy(bytes + 16, &entry_offset, 8);
  struct offload_entry entry = {0, 1, 1, 0, &region_id, "__omp_offloading_corrupt_kernel", 0, 0, NULL};
  struct device_image img = {container, (char *)container + sizeof container, &entry, &entry + 1};
  struct bin_desc desc = {1, &img, &entry, &entry + 1};
  __tgt_register_lib(&desc);
  struct kernel_args args;
  memset(&args, 0, sizeof args);
  args.version = 3;
  args.num_teams[0] = 1;
  args.thread_limit[0] = 1;
  int rc = __tgt_target_kernel(NULL, 0, 1, 1, &region_id, &args);
  fprintf(stderr, "__tgt_target_kernel on a corrupted container returned %d\n", rc);
  __tgt_unregister_lib(&desc);
  return 0;
}
