// An OMPT tool in the program (ompt_start_tool) that registers the EMI target callbacks sees
// every target construct (issue 33): `target` (a kernel with map(to) and map(from), a nowait
// one), `target enter data` / `update` / `exit data`, a `target data` region around a kernel,
// and the omp_target_* routines. It checks what LLVM 22's library reports, in its order: each
// construct's begin and end with the same codeptr_ra and the target_data the tool set at the
// begin; inside, the data operations (alloc, transfers, deletes) and the kernel's submit, each
// end with the host_op_id set at its begin and, for an allocation, the device address; the
// device initialized (and its image loaded) before its first construct. Before the runtime
// connected to libomp's tool interface the tool saw none of it (0 callbacks).
#include <omp-tools.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 100
#define MAX_EVENTS 256

enum what { TARGET, DATA_OP, SUBMIT };
struct event {
  enum what what;
  int kind;  // target kind or data-op type
  int endpoint;
  uint64_t target_data, host_op;
  const void *codeptr;
  int src_null, dest_null;
};
static struct event events[MAX_EVENTS];
static int n_events, device0_initialized, device0_loaded, device_event_order_bad;
static uint64_t next_target_data = 100, next_op = 1000;

static void record(struct event e) {
  if (n_events < MAX_EVENTS) events[n_events] = e;
  n_events++;
}

static void on_target(ompt_target_t kind, ompt_scope_endpoint_t endpoint, int device_num,
                      ompt_data_t *task_data, ompt_data_t *target_task_data,
                      ompt_data_t *target_data, const void *codeptr_ra) {
  (void)task_data; (void)target_task_data;
  if (!device0_initialized && device_num == 0) device_event_order_bad = 1;
  if (endpoint == ompt_scope_begin) target_data->value = ++next_target_data;
  record((struct event){TARGET, kind, endpoint, target_data->value, 0, codeptr_ra, 0, 0});
}

static void on_data_op(ompt_scope_endpoint_t endpoint, ompt_data_t *target_task_data,
                       ompt_data_t *target_data, ompt_id_t *host_op_id,
                       ompt_target_data_op_t optype, void *src_addr, int src_device_num,
                       void *dest_addr, int dest_device_num, size_t bytes,
                       const void *codeptr_ra) {
  (void)target_task_data; (void)src_device_num; (void)dest_device_num; (void)bytes;
  if (endpoint == ompt_scope_begin) *host_op_id = ++next_op;
  record((struct event){DATA_OP, optype, endpoint, target_data ? target_data->value : 0,
                        *host_op_id, codeptr_ra, src_addr == NULL, dest_addr == NULL});
}

static void on_submit(ompt_scope_endpoint_t endpoint, ompt_data_t *target_data,
                      ompt_id_t *host_op_id, unsigned int requested_num_teams) {
  (void)requested_num_teams;
  if (endpoint == ompt_scope_begin) *host_op_id = ++next_op;
  record((struct event){SUBMIT, 0, endpoint, target_data->value, *host_op_id, NULL, 0, 0});
}

static void on_device_initialize(int device_num, const char *type, ompt_device_t *device,
                                 ompt_function_lookup_t lookup, const char *documentation) {
  (void)type; (void)device; (void)lookup; (void)documentation;
  if (device_num == 0) device0_initialized = 1;
}

static void on_device_load(int device_num, const char *filename, int64_t offset_in_file,
                           void *vma_in_file, size_t bytes, void *host_addr, void *device_addr,
                           uint64_t module_id) {
  (void)filename; (void)offset_in_file; (void)vma_in_file; (void)bytes; (void)host_addr;
  (void)device_addr; (void)module_id;
  if (device_num == 0) device0_loaded = 1;
}

static int initialize(ompt_function_lookup_t lookup, int initial_device_num,
                      ompt_data_t *tool_data) {
  (void)initial_device_num; (void)tool_data;
  ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
  set(ompt_callback_target_emi, (ompt_callback_t)on_target);
  set(ompt_callback_target_data_op_emi, (ompt_callback_t)on_data_op);
  set(ompt_callback_target_submit_emi, (ompt_callback_t)on_submit);
  set(ompt_callback_device_initialize, (ompt_callback_t)on_device_initialize);
  set(ompt_callback_device_load, (ompt_callback_t)on_device_load);
  return 1;
}
static void finalize(ompt_data_t *tool_data) { (void)tool_data; }

ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version, const char *runtime_version) {
  (void)omp_version; (void)runtime_version;
  static ompt_start_tool_result_t result = {initialize, finalize, {0}};
  return &result;
}

static int by_letter(const void *a, const void *b) { return *(const char *)a - *(const char *)b; }

// The data operations and submits of the construct whose begin is events[at], as a string of
// letters (a alloc, t to device, f from device, d delete, s submit), checking the pairing.
static void construct_ops(int at, char *ops, size_t room) {
  struct event begin = events[at];
  size_t n = 0;
  for (int i = at + 1; i < n_events; i++) {
    struct event e = events[i];
    if (e.what == TARGET) {
      if (e.endpoint != ompt_scope_end || e.target_data != begin.target_data || e.codeptr != begin.codeptr)
        FAIL("construct %d: ended by event %d (kind %d, endpoint %d) without its target_data or codeptr_ra", at, i, e.kind, e.endpoint);
      break;
    }
    if (e.target_data != begin.target_data)
      FAIL("construct %d: event %d does not carry the construct's target_data (%llu, not %llu)", at, i,
           (unsigned long long)e.target_data, (unsigned long long)begin.target_data);
    if (e.endpoint != ompt_scope_begin) continue;
    if (i + 1 >= n_events || events[i + 1].what != e.what || events[i + 1].endpoint != ompt_scope_end ||
        events[i + 1].host_op != e.host_op)
      FAIL("construct %d: operation %d is not followed by its end with the same host_op_id", at, i);
    if (e.what == DATA_OP && e.kind == ompt_target_data_alloc && events[i + 1].dest_null)
      FAIL("construct %d: an allocation's end has no device address", at);
    if (e.what == DATA_OP && e.codeptr != begin.codeptr)
      FAIL("construct %d: a data operation's codeptr_ra is not the construct's", at);
    const char *letters = "?atfd";
    char c = e.what == SUBMIT ? 's' : (e.kind >= 1 && e.kind <= 4 ? letters[e.kind] : '?');
    if (n + 1 < room) ops[n++] = c;
  }
  ops[n] = 0;
  // The order of the operations within each side of the submit is the runtime's own (LLVM's
  // interleaves each item's allocation and copy): compare them sorted.
  char *split = strchr(ops, 's');
  size_t before = split ? (size_t)(split - ops) : n;
  qsort(ops, before, 1, by_letter);
  if (split) qsort(split + 1, n - before - 1, 1, by_letter);
}

int main(void) {
  int a[N], b[N], x = 1, on_device = 0;
  for (int i = 0; i < N; i++) a[i] = i;
#pragma omp target teams distribute parallel for map(to: a) map(from: b) map(tofrom: on_device)
  for (int i = 0; i < N; i++) {
    b[i] = 2 * a[i];
    if (i == 0) on_device = !omp_is_initial_device();
  }
  if (!on_device) FAIL("the region did not run on the device");
#pragma omp target enter data map(to: a)
#pragma omp target update from(a)
#pragma omp target exit data map(release: a)
#pragma omp target data map(tofrom: x)
  {
#pragma omp target map(tofrom: x)
    x++;
  }
#pragma omp target nowait map(tofrom: x)
  x++;
#pragma omp taskwait
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  void *d = omp_target_alloc(sizeof a, dev);
  if (omp_target_memcpy(d, a, sizeof a, 0, 0, dev, host) ||
      omp_target_memcpy(b, d, sizeof a, 0, 0, host, dev))
    FAIL("omp_target_memcpy failed");
  omp_target_free(d, dev);
  if (b[99] != 99 || x != 3) FAIL("wrong results: b[99] %d, x %d", b[99], x);

  if (n_events > MAX_EVENTS) FAIL("%d events, more than the tool keeps", n_events);
  if (!device0_initialized || !device0_loaded || device_event_order_bad)
    FAIL("device 0 was not initialized and loaded before its first construct");
  // The constructs, in order, and the operations each reports (sorted on each side of the
  // submit).
  static const struct { int kind; const char *ops; } want[] = {
      {ompt_target, "aaattsdddff"},  // kernel: alloc a, b, on_device; a, on_device to the device;
                                     // launch; b, on_device back; deletes
      {ompt_target_enter_data, "at"},
      {ompt_target_update, "f"},
      {ompt_target_exit_data, "d"},
      {ompt_target_enter_data, "at"},  // target data: its begin
      {ompt_target, "s"},              // the kernel inside: x is present
      {ompt_target_exit_data, "df"},   // target data: its end
      {ompt_target, "atsdf"},          // nowait, reported as a target (LLVM 22 does the same)
  };
  int constructs = 0, at = 0;
  for (; at < n_events && constructs < (int)(sizeof want / sizeof want[0]); at++) {
    if (events[at].what != TARGET || events[at].endpoint != ompt_scope_begin) continue;
    if (events[at].kind != want[constructs].kind)
      FAIL("construct %d is of kind %d, expected %d", constructs, events[at].kind, want[constructs].kind);
    if (!events[at].codeptr) FAIL("construct %d has no codeptr_ra", constructs);
    char ops[64];
    construct_ops(at, ops, sizeof ops);
    if (strcmp(ops, want[constructs].ops))
      FAIL("construct %d (kind %d) reported operations \"%s\", expected \"%s\"", constructs,
           events[at].kind, ops, want[constructs].ops);
    constructs++;
  }
  if (constructs != (int)(sizeof want / sizeof want[0]))
    FAIL("the tool saw %d target constructs, expected %d (%d events)", constructs,
         (int)(sizeof want / sizeof want[0]), n_events);
  // The routines, outside any construct: no target_data; alloc, to, from, delete.
  const char *api = "atfd";
  int k = 0;
  for (int i = 0; i < n_events; i++) {
    struct event e = events[i];
    if (e.what != DATA_OP || e.target_data != 0 || e.endpoint != ompt_scope_begin) continue;
    const char *letters = "?atfd";
    if (!api[k] || letters[e.kind] != api[k])
      FAIL("the omp_target_* routines reported data operation %d of type %d, expected the sequence %s", k, e.kind, api);
    if (!e.codeptr) FAIL("a routine's data operation has no codeptr_ra");
    k++;
  }
  if (api[k]) FAIL("the omp_target_* routines reported %d data operations, expected 4", k);
  return 0;
}
