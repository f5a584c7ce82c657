// The program side of the external-RTL test (`cargo xtask test`): registers by hand one image
// that only libomptarget.rtl.fake.so accepts ("FAKE..." in an OffloadBinary container), maps data
// to its device with omp_target_alloc / omp_target_memcpy, launches "fake_kernel" through
// __tgt_target_kernel, and checks the results and the calls the RTL saw; then a launch the RTL
// refuses must fail with an error. Prints "use_fake: OK".
#include <dlfcn.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../programs/registration.h"

#define CHECK(cond, ...)                                                                         \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      fprintf(stderr, "use_fake: FAILED %s: ", #cond);                                          \
      fprintf(stderr, __VA_ARGS__);                                                              \
      fprintf(stderr, "\n");                                                                     \
      return 1;                                                                                  \
    }                                                                                            \
  } while (0)

static char region_id; // the host address that names the kernel
static _Alignas(8) unsigned char container[256];

static void put(size_t at, uint64_t value, int bytes) { memcpy(container + at, &value, (size_t)bytes); }

// OffloadBinary: header (32) | entry (40) | 2 string pairs (32) | strings | image.
static size_t build_container(void) {
  static const char strings[] = "triple\0fake-unknown-none\0arch\0fake";
  static const char image[] = "FAKE image for libomptarget.rtl.fake.so";
  size_t strings_at = 32 + 40 + 32, image_at = (strings_at + sizeof strings + 7) & ~(size_t)7;
  size_t total = image_at + sizeof image;
  memcpy(container, "\x10\xFF\x10\xAD", 4);
  put(4, 1, 4);                       // version
  put(8, total, 8);                   // size
  put(16, 32, 8);                     // entry offset
  put(24, 40, 8);                     // entry size
  put(32, 1, 2);                      // image kind: object
  put(34, 1, 2);                      // offload kind: OpenMP
  put(40, 72, 8);                     // string table offset
  put(48, 2, 8);                      // two strings
  put(56, image_at, 8);               // image offset
  put(64, sizeof image, 8);           // image size
  put(72, strings_at, 8);             // "triple"
  put(80, strings_at + 7, 8);         // "fake-unknown-none"
  put(88, strings_at + 25, 8);        // "arch"
  put(96, strings_at + 30, 8);        // "fake"
  memcpy(container + strings_at, strings, sizeof strings);
  memcpy(container + image_at, image, sizeof image);
  return total;
}

int main(void) {
  size_t size = build_container();
  struct offload_entry entry = {0, 1, 1, 0, &region_id, "fake_kernel", 0, 0, NULL};
  struct device_image img = {container, container + size, &entry, &entry + 1};
  struct bin_desc desc = {1, &img, &entry, &entry + 1};
  __tgt_register_lib(&desc);

  // Devices are numbered per registered image: only the fake RTL's device runs this one.
  int devices = omp_get_num_devices();
  CHECK(devices == 1, "%d devices", devices);
  int dev = 0, host = omp_get_initial_device();

  enum { N = 64 };
  int a[N];
  for (int i = 0; i < N; i++) a[i] = i;
  int *d = omp_target_alloc(sizeof a, dev);
  CHECK(d != NULL, "omp_target_alloc on the fake device");
  CHECK(omp_target_memcpy(d, a, sizeof a, 0, 0, dev, host) == 0, "copy to the device");

  struct kernel_args args;
  memset(&args, 0, sizeof args);
  void *values[2] = {d, (void *)(intptr_t)N};
  int64_t sizes[2] = {0, 0};
  int64_t types[2] = {0x120, 0x120}; // TARGET_PARAM | LITERAL: passed as they are
  args.version = 3;
  args.num_args = 2;
  args.bases = values;
  args.begins = values;
  args.sizes = sizes;
  args.types = types;
  args.num_teams[0] = 3;
  args.thread_limit[0] = 7;
  int rc = __tgt_target_kernel(NULL, dev, 3, 7, &region_id, &args);
  CHECK(rc == 0, "__tgt_target_kernel returned %d", rc);

  int b[N];
  memset(b, 0, sizeof b);
  CHECK(omp_target_memcpy(b, d, sizeof b, 0, 0, host, dev) == 0, "copy from the device");
  for (int i = 0; i < N; i++) CHECK(b[i] == 2 * i + 1, "b[%d] = %d", i, b[i]);
  omp_target_free(d, dev);

  // The RTL is loaded RTLD_LOCAL by the runtime: look it up by name to read its counters.
  void *rtl = dlopen("libomptarget.rtl.fake.so", RTLD_NOW | RTLD_NOLOAD);
  CHECK(rtl != NULL, "libomptarget.rtl.fake.so is not loaded");
  int (*count)(const char *) = (int (*)(const char *))dlsym(rtl, "rtl_fake_count");
  CHECK(count != NULL, "rtl_fake_count");
  CHECK(count("init") == 1, "init %d", count("init"));
  CHECK(count("load") == 1, "load %d", count("load"));
  CHECK(count("alloc") == 1 && count("delete") == 1, "alloc %d delete %d", count("alloc"), count("delete"));
  CHECK(count("submit") == 1 && count("retrieve") == 1, "submit %d retrieve %d", count("submit"), count("retrieve"));
  CHECK(count("run") == 1, "run %d", count("run"));
  CHECK(count("teams") == 3 && count("threads") == 7, "teams %d threads %d", count("teams"), count("threads"));
  dlclose(rtl);

  // A launch the RTL refuses: an error (the runtime names the RTL file and the call), no crash.
  args.num_args = 0;
  args.num_teams[0] = 99;
  rc = __tgt_target_kernel(NULL, dev, 99, 7, &region_id, &args);
  CHECK(rc != 0, "a failed launch returned %d", rc);
  __tgt_unregister_lib(&desc);
  printf("use_fake: OK\n");
  return 0;
}
