// EXPECT: fail
// EXPECT-STDERR: device image 0 of the registered program: ELF header: EI_VERSION 0xa5 at offset 0x6 is not EV_CURRENT (1)
// EXPECT-STDERR: device 0 has no kernel for target region
// A library registered by hand whose device image is an ELF header followed by garbage: the
// registration names the image and the field at fault (no loader sees it), and the first
// construct on the device ends the program with a message that names the device, not a crash.
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "registration.h"

static char region_id; // the host address that names the kernel
static unsigned char image[512];

int main(void) {
  memset(image, 0xA5, sizeof image);
  memcpy(image, "\x7f" "ELF", 4);
  image[4] = 2;                        // ELFCLASS64
  image[5] = 1;                        // little-endian
  image[18] = 62; image[19] = 0;       // EM_X86_64: looks like a host image
  int rc = register_and_launch(image, image + sizeof image, "__omp_offloading_garbage_kernel", &region_id);
  // Under OMP_TARGET_OFFLOAD=mandatory the runtime must not come back with a kernel it never loaded.
  fprintf(stderr, "__tgt_target_kernel on a garbage image returned %d\n", rc);
  return 0;
}
