// The older (non-EMI) OMPT target callbacks (issue 33): `target` at both ends of each construct
// with its target_id, `target_data_op` and `target_submit` once per operation, each with the
// target_id of the construct it belongs to and a host_op_id of its own. Checked for a kernel,
// enter/update/exit data and the routines (no construct: target_id 0 there is not checked, LLVM
// gives the routines none). Before the runtime connected to libomp's tool interface the tool
// saw no callback at all.
#include <omp-tools.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 64
#define MAX 128

static int begins, ends, ops, submits, nesting, op_outside;
static ompt_id_t open_target, host_ops[MAX];
static int n_host_ops;

static void remember(ompt_id_t id) {
  for (int i = 0; i < n_host_ops; i++)
    if (host_ops[i] == id) FAIL("host_op_id %llu given twice", (unsigned long long)id);
  if (n_host_ops < MAX) host_ops[n_host_ops++] = id;
}

static void on_target(ompt_target_t kind, ompt_scope_endpoint_t endpoint, int device_num,
                      ompt_data_t *task_data, ompt_id_t target_id, const void *codeptr_ra) {
  (void)kind; (void)device_num; (void)task_data;
  if (!codeptr_ra) FAIL("a construct without codeptr_ra");
  if (endpoint == ompt_scope_begin) {
    if (nesting++) FAIL("a construct began inside another on the same thread");
    open_target = target_id;
    begins++;
  } else {
    if (--nesting || target_id != open_target) FAIL("a construct ended with another target_id");
    ends++;
  }
}

static void on_data_op(ompt_id_t target_id, ompt_id_t host_op_id, ompt_target_data_op_t optype,
                       void *src_addr, int src_device_num, void *dest_addr, int dest_device_num,
                       size_t bytes, const void *codeptr_ra) {
  (void)optype; (void)src_addr; (void)src_device_num; (void)dest_addr; (void)dest_device_num;
  (void)bytes; (void)codeptr_ra;
  if (nesting && target_id != open_target)
    FAIL("a data operation has target_id %llu inside construct %llu", (unsigned long long)target_id,
         (unsigned long long)open_target);
  if (!nesting) op_outside++;
  remember(host_op_id);
  ops++;
}

static void on_submit(ompt_id_t target_id, ompt_id_t host_op_id, unsigned int requested_num_teams) {
  (void)requested_num_teams;
  if (!nesting || target_id != open_target) FAIL("a submit outside its construct");
  remember(host_op_id);
  submits++;
}

static int initialize(ompt_function_lookup_t lookup, int initial_device_num, ompt_data_t *tool_data) {
  (void)initial_device_num; (void)tool_data;
  ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
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

int main(void) {
  int a[N], b[N], on_device = 0;
  for (int i = 0; i < N; i++) a[i] = i;
#pragma omp target map(to: a) map(from: b) map(tofrom: on_device)
  {
    for (int i = 0; i < N; i++) b[i] = a[i] + 1;
    on_device = !omp_is_initial_device();
  }
  if (!on_device) FAIL("the region did not run on the device");
#pragma omp target enter data map(to: a)
#pragma omp target update from(a)
#pragma omp target exit data map(release: a)
  void *d = omp_target_alloc(sizeof a, omp_get_default_device());
  omp_target_free(d, omp_get_default_device());
  if (b[N - 1] != N) FAIL("wrong result");
  // kernel: 3 allocs, 2 transfers to, 2 from, 3 deletes; enter: alloc + to; update: from;
  // exit: delete; the routines: alloc, delete.
  if (begins != 4 || ends != 4) FAIL("%d construct begins and %d ends, expected 4 each", begins, ends);
  if (submits != 1) FAIL("%d submits, expected 1", submits);
  if (ops != 16 || op_outside != 2) FAIL("%d data operations (%d outside constructs), expected 16 (2)", ops, op_outside);
  return 0;
}
