// An OMPT tool written in C++ (issue 33): a class that registers the non-EMI target callbacks
// through its static members and counts what it sees, over a C++ program that offloads a
// member function's loop on a std::vector's data and a target data region around two kernels.
// The counts are LLVM 22's library's: five constructs begin and end (the member function's
// kernel, the target data region as an enter-data construct at its start and an exit-data one
// at its end, the two kernels inside it), three submits, and eight data operations (the
// member function's allocation, transfers both ways and delete; the region's allocation and
// transfer in, transfer out and delete; the kernels inside find the array present); every
// callback carries the target_id of the construct it belongs to.
#include <omp-tools.h>
#include <omp.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define FAIL(...) do { std::fprintf(stderr, __VA_ARGS__); std::fputc('\n', stderr); std::exit(1); } while (0)

class Counter {
 public:
  static inline int begins = 0, ends = 0, submits = 0, ops = 0, foreign_ids = 0;
  static inline ompt_id_t open_target = 0;

  static void target(ompt_target_t, ompt_scope_endpoint_t endpoint, int, ompt_data_t *,
                     ompt_id_t target_id, const void *) {
    if (endpoint == ompt_scope_begin) {
      begins++;
      open_target = target_id;
    } else {
      ends++;
      if (target_id != open_target) foreign_ids++;
    }
  }
  static void data_op(ompt_id_t target_id, ompt_id_t, ompt_target_data_op_t, void *, int, void *,
                      int, size_t, const void *) {
    ops++;
    if (target_id != open_target) foreign_ids++;
  }
  static void submit(ompt_id_t target_id, ompt_id_t, unsigned int) {
    submits++;
    if (target_id != open_target) foreign_ids++;
  }
  static int initialize(ompt_function_lookup_t lookup, int, ompt_data_t *) {
    auto set = reinterpret_cast<ompt_set_callback_t>(lookup("ompt_set_callback"));
    set(ompt_callback_target, reinterpret_cast<ompt_callback_t>(&Counter::target));
    set(ompt_callback_target_data_op, reinterpret_cast<ompt_callback_t>(&Counter::data_op));
    set(ompt_callback_target_submit, reinterpret_cast<ompt_callback_t>(&Counter::submit));
    return 1;
  }
  static void finalize(ompt_data_t *) {}
};

extern "C" ompt_start_tool_result_t *ompt_start_tool(unsigned int, const char *) {
  static ompt_start_tool_result_t result = {&Counter::initialize, &Counter::finalize, {0}};
  return &result;
}

struct Scaler {
  double factor;
  void scale(std::vector<double> &v) const {
    double *p = v.data();
    int n = static_cast<int>(v.size());
    double f = factor;
#pragma omp target teams distribute parallel for map(tofrom: p[0:n]) firstprivate(f)
    for (int i = 0; i < n; i++) p[i] *= f;
  }
};

int main() {
  std::vector<double> v(1000, 1.0);
  Scaler{3.0}.scale(v);
  double *p = v.data();
  int n = static_cast<int>(v.size());
#pragma omp target data map(tofrom: p[0:n])
  {
#pragma omp target teams distribute parallel for
    for (int i = 0; i < n; i++) p[i] += 1.0;
#pragma omp target teams distribute parallel for
    for (int i = 0; i < n; i++) p[i] *= 2.0;
  }
  for (double x : v)
    if (x != 8.0) FAIL("v holds %g, expected 8", x);
  if (Counter::begins != 5 || Counter::ends != 5 || Counter::submits != 3 || Counter::ops != 8 ||
      Counter::foreign_ids != 0)
    FAIL("the tool saw %d begins, %d ends, %d submits, %d data operations, %d with another "
         "construct's target_id (expected 5, 5, 3, 8, 0)",
         Counter::begins, Counter::ends, Counter::submits, Counter::ops, Counter::foreign_ids);
  std::printf("233: the C++ tool counted as LLVM 22's library reports\n");
  return 0;
}
