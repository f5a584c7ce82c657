// OMPT device tracing (issue 33): a tool in the program finds ompt_set_trace_ompt,
// ompt_start_trace, ompt_flush_trace, ompt_stop_trace, ompt_advance_buffer_cursor,
// ompt_get_record_ompt, ompt_get_device_time and ompt_translate_time through the lookup it
// gets at device_initialize, asks for every record type and hands out small buffers (so several
// fill up). It checks: a kernel record (ompt_record_target_kernel_t) for every submit with its
// host_op_id and the construct's target_id; a data-op record for every allocation, transfer and
// deletion with its host_op_id, type and size; a begin and an end record for every construct;
// start times that never go back, each operation's end after its start, and both, translated,
// inside the host times (omp_get_wtime) of the construct's begin and end callbacks;
// ompt_get_device_time translated near omp_get_wtime; no record after ompt_stop_trace.
// LLVM-REF: fails (LLVM 22 has no device tracing: the lookup given at device_initialize finds no ompt_start_trace)
#include <omp-tools.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 4096
#define MAX 512
// Translated device times may differ from omp_get_wtime by the error of pairing two clocks.
#define SLACK 2e-3

static ompt_set_trace_ompt_t set_trace;
static ompt_start_trace_t start_trace;
static ompt_flush_trace_t flush_trace;
static ompt_stop_trace_t stop_trace;
static ompt_advance_buffer_cursor_t advance;
static ompt_get_record_ompt_t get_record;
static ompt_get_device_time_t device_time;
static ompt_translate_time_t translate;
static ompt_device_t *device0;

struct record {
  int type;
  ompt_device_time_t time, end_time;
  ompt_id_t target_id, host_op_id;
  int optype, endpoint;
  size_t bytes;
};
static struct record records[MAX];
static int n_records, buffers_completed, buffers_not_owned;

// What the host callbacks saw: constructs by target_id with their host times, operations.
struct construct { ompt_id_t id; double begin, end; };
static struct construct constructs[64];
static int n_constructs;
struct op { ompt_id_t target_id, host_op_id; int optype; size_t bytes; };
static struct op ops[MAX];
static int n_ops;

static void on_request(int device_num, ompt_buffer_t **buffer, size_t *bytes) {
  (void)device_num;
  *bytes = 10 * sizeof(ompt_record_ompt_t);
  *buffer = malloc(*bytes);
}

static void on_complete(int device_num, ompt_buffer_t *buffer, size_t bytes,
                        ompt_buffer_cursor_t begin, int buffer_owned) {
  (void)device_num;
  buffers_completed++;
  if (!buffer_owned) buffers_not_owned++;
  ompt_buffer_cursor_t at = begin;
  if (bytes > 0) {
    do {
      ompt_record_ompt_t *r = get_record(buffer, at);
      if (!r) FAIL("ompt_get_record_ompt returned NULL at cursor %llu", (unsigned long long)at);
      if (n_records < MAX) {
        struct record *mine = &records[n_records];
        memset(mine, 0, sizeof *mine);
        mine->type = r->type;
        mine->time = r->time;
        mine->target_id = r->target_id;
        if (r->type == ompt_callback_target_submit) {
          mine->host_op_id = r->record.target_kernel.host_op_id;
          mine->end_time = r->record.target_kernel.end_time;
        } else if (r->type == ompt_callback_target_data_op) {
          mine->host_op_id = r->record.target_data_op.host_op_id;
          mine->end_time = r->record.target_data_op.end_time;
          mine->optype = r->record.target_data_op.optype;
          mine->bytes = r->record.target_data_op.bytes;
        } else if (r->type == ompt_callback_target) {
          mine->endpoint = r->record.target.endpoint;
          mine->end_time = r->time;
          if (r->record.target.target_id != r->target_id)
            FAIL("a target record's target_id %llu differs from the record's %llu",
                 (unsigned long long)r->record.target.target_id, (unsigned long long)r->target_id);
        } else {
          FAIL("a record of type %d, not asked for", (int)r->type);
        }
      }
      n_records++;
    } while (advance(device0, buffer, bytes, at, &at));
  }
  if (buffer_owned) free(buffer);
}

static void on_target(ompt_target_t kind, ompt_scope_endpoint_t endpoint, int device_num,
                      ompt_data_t *task_data, ompt_id_t target_id, const void *codeptr_ra) {
  (void)kind; (void)device_num; (void)task_data; (void)codeptr_ra;
  double now = omp_get_wtime();
  if (endpoint == ompt_scope_begin) {
    if (n_constructs < 64) constructs[n_constructs++] = (struct construct){target_id, now, 0};
    return;
  }
  for (int i = 0; i < n_constructs; i++)
    if (constructs[i].id == target_id) constructs[i].end = now;
}

static void on_data_op(ompt_id_t target_id, ompt_id_t host_op_id, ompt_target_data_op_t optype,
                       void *src_addr, int src_device_num, void *dest_addr, int dest_device_num,
                       size_t bytes, const void *codeptr_ra) {
  (void)src_addr; (void)src_device_num; (void)dest_addr; (void)dest_device_num; (void)codeptr_ra;
  if (n_ops < MAX) ops[n_ops++] = (struct op){target_id, host_op_id, optype, bytes};
}

static void on_submit(ompt_id_t target_id, ompt_id_t host_op_id, unsigned int requested_num_teams) {
  (void)requested_num_teams;
  if (n_ops < MAX) ops[n_ops++] = (struct op){target_id, host_op_id, -1, 0};
}

static void on_device_initialize(int device_num, const char *type, ompt_device_t *device,
                                 ompt_function_lookup_t lookup, const char *documentation) {
  (void)type; (void)documentation;
  if (device_num != 0) return;
  device0 = device;
  set_trace = (ompt_set_trace_ompt_t)lookup("ompt_set_trace_ompt");
  start_trace = (ompt_start_trace_t)lookup("ompt_start_trace");
  flush_trace = (ompt_flush_trace_t)lookup("ompt_flush_trace");
  stop_trace = (ompt_stop_trace_t)lookup("ompt_stop_trace");
  advance = (ompt_advance_buffer_cursor_t)lookup("ompt_advance_buffer_cursor");
  get_record = (ompt_get_record_ompt_t)lookup("ompt_get_record_ompt");
  device_time = (ompt_get_device_time_t)lookup("ompt_get_device_time");
  translate = (ompt_translate_time_t)lookup("ompt_translate_time");
  if (!set_trace || !start_trace || !flush_trace || !stop_trace || !advance || !get_record ||
      !device_time || !translate)
    FAIL("device tracing: the lookup given at device_initialize lacks an entry point "
         "(ompt_start_trace %s)", start_trace ? "found" : "missing");
  if (set_trace(device, 1, 0) != ompt_set_always)
    FAIL("ompt_set_trace_ompt(all) did not answer ompt_set_always");
  if (set_trace(device, 1, ompt_callback_device_load) != ompt_set_never)
    FAIL("ompt_set_trace_ompt of device_load records did not answer ompt_set_never");
  if (!start_trace(device, on_request, on_complete)) FAIL("ompt_start_trace failed");
}

static int initialize(ompt_function_lookup_t lookup, int initial_device_num,
                      ompt_data_t *tool_data) {
  (void)initial_device_num; (void)tool_data;
  ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
  set(ompt_callback_device_initialize, (ompt_callback_t)on_device_initialize);
  set(ompt_callback_target, (ompt_callback_t)on_target);
  set(ompt_callback_target_data_op, (ompt_callback_t)on_data_op);
  set(ompt_callback_target_submit, (ompt_callback_t)on_submit);
  return 1;
}

static void finalize(ompt_data_t *tool_data) { (void)tool_data; }

ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version, const char *runtime_version) {
  (void)omp_version; (void)runtime_version;
  static ompt_start_tool_result_t result = {initialize, finalize, {0}};
  return &result;
}

static const struct record *record_of(ompt_id_t host_op_id) {
  for (int i = 0; i < n_records && i < MAX; i++)
    if (records[i].host_op_id == host_op_id && records[i].type != ompt_callback_target)
      return &records[i];
  return NULL;
}

static const struct construct *construct_of(ompt_id_t target_id) {
  for (int i = 0; i < n_constructs; i++)
    if (constructs[i].id == target_id) return &constructs[i];
  return NULL;
}

int main(void) {
  double a[N], b[N];
  for (int i = 0; i < N; i++) a[i] = i;
#pragma omp target teams distribute parallel for map(to: a) map(from: b) device(0)
  for (int i = 0; i < N; i++) b[i] = 2 * a[i];
#pragma omp target enter data map(to: a) device(0)
#pragma omp target teams distribute parallel for device(0)
  for (int i = 0; i < N; i++) a[i] += 1;
#pragma omp target update from(a) device(0)
#pragma omp target exit data map(delete: a) device(0)
  for (int i = 0; i < N; i++)
    if (b[i] != 2.0 * i || a[i] != i + 1.0) FAIL("wrong results at %d: %g %g", i, b[i], a[i]);
  if (!device0) FAIL("device 0 was not initialized for the tool");

  double host_now = omp_get_wtime();
  double device_now = translate(device0, device_time(device0));
  if (device_now < host_now - SLACK || device_now > host_now + 0.5)
    FAIL("ompt_get_device_time translated is %.6f s, omp_get_wtime %.6f s", device_now, host_now);

  if (!flush_trace(device0)) FAIL("ompt_flush_trace failed");
  if (n_records > MAX) FAIL("%d records, more than this tool keeps", n_records);
  if (buffers_completed < 2 || buffers_not_owned)
    FAIL("%d buffers completed (%d not owned by the tool); 10-record buffers must fill up",
         buffers_completed, buffers_not_owned);

  // Every operation the callbacks saw has its record; counts match.
  int kernels = 0, transfers = 0;
  for (int i = 0; i < n_ops; i++) {
    const struct record *r = record_of(ops[i].host_op_id);
    if (!r) FAIL("no trace record for host operation %llu (%s)", (unsigned long long)ops[i].host_op_id,
                 ops[i].optype < 0 ? "a kernel" : "a data operation");
    if (r->target_id != ops[i].target_id)
      FAIL("record of operation %llu: target_id %llu, its callback said %llu",
           (unsigned long long)ops[i].host_op_id, (unsigned long long)r->target_id,
           (unsigned long long)ops[i].target_id);
    if (ops[i].optype < 0) {
      kernels++;
      if (r->type != ompt_callback_target_submit) FAIL("a kernel's record has type %d", r->type);
    } else {
      if (ops[i].optype == ompt_target_data_transfer_to_device ||
          ops[i].optype == ompt_target_data_transfer_from_device)
        transfers++;
      if (r->type != ompt_callback_target_data_op || r->optype != ops[i].optype ||
          r->bytes != ops[i].bytes)
        FAIL("data operation %llu: record type %d optype %d bytes %zu, callback optype %d bytes %zu",
             (unsigned long long)ops[i].host_op_id, r->type, r->optype, r->bytes, ops[i].optype,
             ops[i].bytes);
    }
  }
  if (kernels != 2 || transfers < 4)
    FAIL("%d kernels and %d transfers recorded, expected 2 and at least 4", kernels, transfers);
  int operations = 0, begins = 0, ends = 0;
  for (int i = 0; i < n_records; i++) {
    const struct record *r = &records[i];
    if (r->type == ompt_callback_target) {
      if (r->endpoint == ompt_scope_begin) begins++; else ends++;
    } else {
      operations++;
    }
    if (i > 0 && r->time < records[i - 1].time)
      FAIL("record %d starts at device time %llu, before record %d (%llu)", i,
           (unsigned long long)r->time, i - 1, (unsigned long long)records[i - 1].time);
    if (r->end_time < r->time) FAIL("record %d ends before it starts", i);
    const struct construct *c = construct_of(r->target_id);
    if (!c) FAIL("record %d names target_id %llu, which no construct had", i, (unsigned long long)r->target_id);
    double start = translate(device0, r->time), end = translate(device0, r->end_time);
    if (start < c->begin - SLACK || end > c->end + SLACK)
      FAIL("record %d (type %d) at %.6f-%.6f s lies outside its construct, %.6f-%.6f s", i, r->type,
           start, end, c->begin, c->end);
  }
  if (operations != n_ops) FAIL("%d operation records, %d operations called back", operations, n_ops);
  if (begins != n_constructs || ends != n_constructs)
    FAIL("%d begin and %d end records for %d constructs", begins, ends, n_constructs);

  // Stopped: nothing more is recorded.
  int before = n_records;
  if (!stop_trace(device0)) FAIL("ompt_stop_trace failed");
#pragma omp target map(tofrom: a[0:1]) device(0)
  a[0] += 1;
  if (n_records != before) FAIL("%d records after ompt_stop_trace", n_records - before);
  printf("device tracing: %d records of %d constructs, %d kernels, %d transfers, %d buffers\n",
         n_records, n_constructs, kernels, transfers, buffers_completed);
  return 0;
}
