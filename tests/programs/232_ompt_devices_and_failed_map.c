// An OMPT tool (issue 33) over two devices and a failed mapping. For each of the first two
// devices, a target region with map(tofrom: x) and device(d): the tool sees device d
// initialized before its first construct, the region's begin and end on device d, and inside
// it, in order, the allocation, the transfer to the device, the transfer back and the delete,
// each begin and end, between the host (the initial device's number) and device d. Then
// `target enter data map(present, to: y)` of a y nobody mapped: the construct's begin reaches
// the tool, the mapping fails with LLVM's message and the program stops (no end callback), as
// with LLVM 22's library. With one device (a GPU machine) only device 0's part runs. The tool
// also asks for ompt_callback_target_map_emi: libomp answers ompt_set_never (no runtime of LLVM
// 22 makes it), and it never comes.
// EXPECT: abort
// EXPECT-STDERR-BOTH: tool: the devices' constructs as expected
// EXPECT-STDERR-BOTH: tool: enter data begins on device 0
// EXPECT-STDERR-BOTH: device mapping required by 'present' map type modifier does not exist
#include <omp-tools.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define MAX_EVENTS 64

struct event { int what, kind, endpoint, device, src, dest; };
enum { TARGET = 1, OP = 2, INIT = 3 };
static struct event events[MAX_EVENTS];
static int n_events, map_callbacks, map_registration = -1;

static void record(struct event e) {
  if (n_events < MAX_EVENTS) events[n_events] = e;
  n_events++;
}

static void on_target(ompt_target_t kind, ompt_scope_endpoint_t endpoint, int device_num,
                      ompt_data_t *task_data, ompt_data_t *target_task_data,
                      ompt_data_t *target_data, const void *codeptr_ra) {
  (void)task_data; (void)target_task_data; (void)target_data; (void)codeptr_ra;
  record((struct event){TARGET, (int)kind, (int)endpoint, device_num, 0, 0});
  if (kind == ompt_target_enter_data && endpoint == ompt_scope_begin)
    fprintf(stderr, "tool: enter data begins on device %d\n", device_num);
}

static void on_op(ompt_scope_endpoint_t endpoint, ompt_data_t *target_task_data,
                  ompt_data_t *target_data, ompt_id_t *host_op_id, ompt_target_data_op_t optype,
                  void *src_addr, int src_device_num, void *dest_addr, int dest_device_num,
                  size_t bytes, const void *codeptr_ra) {
  (void)target_task_data; (void)target_data; (void)host_op_id; (void)src_addr; (void)dest_addr;
  (void)bytes; (void)codeptr_ra;
  record((struct event){OP, (int)optype, (int)endpoint, 0, src_device_num, dest_device_num});
}

static void on_map(ompt_data_t *target_data, unsigned int nitems, void **host_addr,
                   void **device_addr, size_t *bytes, unsigned int *mapping_flags,
                   const void *codeptr_ra) {
  (void)target_data; (void)nitems; (void)host_addr; (void)device_addr; (void)bytes;
  (void)mapping_flags; (void)codeptr_ra;
  map_callbacks++;
}

static void on_init(int device_num, const char *type, ompt_device_t *device,
                    ompt_function_lookup_t lookup, const char *documentation) {
  (void)type; (void)device; (void)lookup; (void)documentation;
  record((struct event){INIT, 0, 0, device_num, 0, 0});
}

static int initialize(ompt_function_lookup_t lookup, int initial_device_num, ompt_data_t *tool_data) {
  (void)initial_device_num; (void)tool_data;
  ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
  set(ompt_callback_target_emi, (ompt_callback_t)on_target);
  set(ompt_callback_target_data_op_emi, (ompt_callback_t)on_op);
  set(ompt_callback_device_initialize, (ompt_callback_t)on_init);
  map_registration = set(ompt_callback_target_map_emi, (ompt_callback_t)on_map);
  return 1;
}
static void finalize(ompt_data_t *tool_data) { (void)tool_data; }
ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version, const char *runtime_version) {
  (void)omp_version; (void)runtime_version;
  static ompt_start_tool_result_t result = {initialize, finalize, {0}};
  return &result;
}

// The events of device d's region, from `at`: its begin, the four operations (begin and end
// each), its end. Returns the index after them.
static int check_region(int at, int d, int host) {
  const struct { int kind, src, dest; } ops[4] = {
      {ompt_target_data_alloc, host, d},
      {ompt_target_data_transfer_to_device, host, d},
      {ompt_target_data_transfer_from_device, d, host},
      {ompt_target_data_delete, d, -1},
  };
  struct event *e = &events[at];
  if (e->what != TARGET || e->kind != ompt_target || e->endpoint != ompt_scope_begin || e->device != d)
    FAIL("event %d: not device %d's target begin (what %d kind %d endpoint %d device %d)", at, d,
         e->what, e->kind, e->endpoint, e->device);
  at++;
  for (int k = 0; k < 4; k++)
    for (int endpoint = ompt_scope_begin; endpoint <= ompt_scope_end; endpoint++, at++) {
      e = &events[at];
      if (e->what != OP || e->kind != ops[k].kind || e->endpoint != endpoint ||
          e->src != ops[k].src || e->dest != ops[k].dest)
        FAIL("device %d, event %d: expected data op %d endpoint %d %d->%d, got what %d op %d endpoint %d %d->%d",
             d, at, ops[k].kind, endpoint, ops[k].src, ops[k].dest, e->what, e->kind, e->endpoint,
             e->src, e->dest);
    }
  e = &events[at];
  if (e->what != TARGET || e->kind != ompt_target || e->endpoint != ompt_scope_end || e->device != d)
    FAIL("event %d: not device %d's target end", at, d);
  return at + 1;
}

int main(void) {
  int x = 1, y = 2;
  int devices = omp_get_num_devices() < 2 ? omp_get_num_devices() : 2;
  int host = omp_get_initial_device();
  if (devices < 1) FAIL("no device");
  for (int d = 0; d < devices; d++) {
#pragma omp target map(tofrom: x) device(d)
    x++;
  }
  if (x != 1 + devices) FAIL("x = %d after %d regions", x, devices);
  if (n_events > MAX_EVENTS) FAIL("%d events", n_events);
  int at = 0, initialized[64] = {0};
  for (int d = 0; d < devices; d++) {
    // The device's initialization comes before its first construct: here, or with an earlier
    // device's (LLVM's library may initialize them together). Other devices may be initialized
    // too.
    while (at < n_events && events[at].what == INIT) {
      if (events[at].device >= 0 && events[at].device < 64) initialized[events[at].device] = 1;
      at++;
    }
    if (!initialized[d]) FAIL("device %d was not initialized before its first construct", d);
    at = check_region(at, d, host);
  }
  if (at != n_events) FAIL("%d events after the regions", n_events - at);
  if (map_registration != ompt_set_never || map_callbacks != 0)
    FAIL("target_map_emi: registration answered %d (ompt_set_never is %d), %d callbacks",
         map_registration, ompt_set_never, map_callbacks);
  fprintf(stderr, "tool: the devices' constructs as expected\n");
  fflush(stderr);
#pragma omp target enter data map(present, to: y)
  FAIL("the failed mapping did not stop the program");
  return 0;
}
