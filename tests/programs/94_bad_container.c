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
  int rc = register_and_launch(container, (char *)container + sizeof container, "__omp_offloading_corrupt_kernel", &region_id);
  fprintf(stderr, "__tgt_target_kernel on a corrupted container returned %d\n", rc);
  return 0;
}
