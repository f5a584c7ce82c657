// A minimal external target RTL in the seed's interface (libomptarget.rtl.<name>.so), for the
// discovery test (`cargo xtask test`): one device whose memory is the host heap. It accepts only
// images whose first 4 bytes are "FAKE"; its table has one entry, "fake_kernel", a function here.
// It counts every call; the test program reads the counts with rtl_fake_count(). A launch with
// 99 teams fails with code 5.
// Built with -DRTL_FAKE_BROKEN it lacks __tgt_rtl_data_delete, so the runtime must skip it.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// The ABI structures (offload_entry, device_image); not the programs' registration helper.
#define RUSTOMP_REGISTRATION_TYPES_ONLY
#include "../programs/registration.h"

struct target_table {
  struct offload_entry *begin, *end;
};

enum { INIT, VALID, LOAD, ALLOC, SUBMIT, RETRIEVE, DELETE, RUN, CALLS };
static const char *const call_names[CALLS] = {"init", "valid", "load", "alloc", "submit", "retrieve", "delete", "run"};
static int counts[CALLS];
static int32_t last_teams, last_threads;

int rtl_fake_count(const char *call) {
  if (!strcmp(call, "teams")) return last_teams;
  if (!strcmp(call, "threads")) return last_threads;
  for (int i = 0; i < CALLS; i++)
    if (!strcmp(call, call_names[i])) return counts[i];
  return -1;
}

// The device code: a[i] = 2 * a[i] + 1 for i < n, with args = {a, n}.
static void fake_kernel(void **args, int32_t argnum) {
  if (argnum != 2) return;
  int *a = args[0];
  intptr_t n = (intptr_t)args[1];
  for (intptr_t i = 0; i < n; i++) a[i] = 2 * a[i] + 1;
}

static struct offload_entry table_entries[1];
static struct target_table table;

int32_t __tgt_rtl_number_of_devices(void) { return 1; }

int32_t __tgt_rtl_init_device(int32_t device) {
  counts[INIT]++;
  return device == 0 ? 0 : 1;
}

int32_t __tgt_rtl_is_valid_binary(struct device_image *image) {
  counts[VALID]++;
  size_t size = (size_t)((char *)image->end - (char *)image->start);
  return size >= 4 && memcmp(image->start, "FAKE", 4) == 0;
}

struct target_table *__tgt_rtl_load_binary(int32_t device, struct device_image *image) {
  counts[LOAD]++;
  if (device != 0 || !__tgt_rtl_is_valid_binary(image)) return NULL;
  table_entries[0].address = (void *)fake_kernel;
  table_entries[0].symbol_name = "fake_kernel";
  table.begin = table_entries;
  table.end = table_entries + 1;
  return &table;
}

void *__tgt_rtl_data_alloc(int32_t device, int64_t size, void *host_ptr) {
  (void)host_ptr;
  counts[ALLOC]++;
  return device == 0 && size >= 0 ? malloc(size ? (size_t)size : 1) : NULL;
}

int32_t __tgt_rtl_data_submit(int32_t device, void *target, void *host, int64_t size) {
  counts[SUBMIT]++;
  if (device != 0) return 1;
  memcpy(target, host, (size_t)size);
  return 0;
}

int32_t __tgt_rtl_data_retrieve(int32_t device, void *host, void *target, int64_t size) {
  counts[RETRIEVE]++;
  if (device != 0) return 1;
  memcpy(host, target, (size_t)size);
  return 0;
}

#ifndef RTL_FAKE_BROKEN
int32_t __tgt_rtl_data_delete(int32_t device, void *target) {
  counts[DELETE]++;
  if (device != 0) return 1;
  free(target);
  return 0;
}
#endif

int32_t __tgt_rtl_run_target_team_region(int32_t device, void *entry, void **args, int32_t argnum,
                                         int32_t num_teams, int32_t thread_limit) {
  counts[RUN]++;
  if (device != 0 || entry != (void *)fake_kernel) return 2;
  if (num_teams == 99) return 5; // the test's failing launch
  last_teams = num_teams;
  last_threads = thread_limit;
  fake_kernel(args, argnum);
  return 0;
}
