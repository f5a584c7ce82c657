// A tool that libomp starts but that registers nothing for offload (issue 33): only a
// parallel-begin callback. The offload runtime, connected to libomp's tool interface, finds no
// target callback, reports nothing, and the constructs work as without a tool.
#include <omp-tools.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

static int parallel_begins;
static void on_parallel_begin(ompt_data_t *encountering_task_data,
                              const ompt_frame_t *encountering_task_frame,
                              ompt_data_t *parallel_data, unsigned int requested_parallelism,
                              int flags, const void *codeptr_ra) {
  (void)encountering_task_data; (void)encountering_task_frame; (void)parallel_data;
  (void)requested_parallelism; (void)flags; (void)codeptr_ra;
  parallel_begins++;
}
static int initialize(ompt_function_lookup_t lookup, int initial_device_num, ompt_data_t *tool_data) {
  (void)initial_device_num; (void)tool_data;
  ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
  set(ompt_callback_parallel_begin, (ompt_callback_t)on_parallel_begin);
  return 1;
}
static void finalize(ompt_data_t *tool_data) { (void)tool_data; }
ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version, const char *runtime_version) {
  (void)omp_version; (void)runtime_version;
  static ompt_start_tool_result_t result = {initialize, finalize, {0}};
  return &result;
}

int main(void) {
  int x[32], on_device = 0;
#pragma omp target map(from: x, on_device)
  {
    for (int i = 0; i < 32; i++) x[i] = i * i;
    on_device = !omp_is_initial_device();
  }
  if (!on_device) FAIL("the region did not run on the device");
  for (int i = 0; i < 32; i++)
    if (x[i] != i * i) FAIL("x[%d] = %d", i, x[i]);
  int threads = 0;
#pragma omp parallel num_threads(2)
  {
#pragma omp atomic
    threads++;
  }
  if (threads < 1) FAIL("no thread ran the parallel region");
  if (parallel_begins < 1) FAIL("the tool was not started (no parallel-begin callback)");
  return 0;
}
