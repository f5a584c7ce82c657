// LLVM-REF: fails (clang-22 alone calls the host address: the host version runs)
// Function pointers that travel on the device: a callback passed to a declare target function,
// an indirect function that calls the pointer it is given (twice, nested), a pointer kept in a
// declare target global between regions, and calls inside a parallel region of a generic-mode
// distribute region (the runtime's state machine runs the region; the call inside it is the user's).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

typedef int (*fn_t)(int);

#pragma omp begin declare target indirect
int add7(int x) { return x + 7 + 1000 * omp_is_initial_device(); }
int times3(int x) { return 3 * x + 1000 * omp_is_initial_device(); }
int apply_twice(fn_t f, int x) { return f(f(x)); }
#pragma omp end declare target

typedef int (*higher_t)(fn_t, int);

fn_t saved = 0;
#pragma omp declare target to(saved)

#pragma omp begin declare target
int sum_over(fn_t f, int n) {
  int s = 0;
  for (int i = 0; i < n; i++) s += f(i);
  return s;
}
#pragma omp end declare target

int main(void) {
  fn_t a = add7, t = times3;
  higher_t h = apply_twice;
  int r1 = 0, r2 = 0, r3 = 0;
#pragma omp target firstprivate(a, t, h) map(from: r1, r2, r3)
  {
    r1 = sum_over(a, 4);  // 7 + 8 + 9 + 10
    r2 = h(t, 2);         // times3(times3(2))
    r3 = h(a, h(t, 1));   // add7(add7(times3(times3(1))))
  }
  if (r1 != 34) FAIL("callback sum %d, expected 34", r1);
  if (r2 != 18) FAIL("apply_twice(times3, 2) = %d, expected 18", r2);
  if (r3 != 23) FAIL("nested apply_twice = %d, expected 23", r3);

  // A host pointer stored in a declare target global, copied to the device, called later.
  saved = t;
#pragma omp target update to(saved)
  int r4 = 0;
#pragma omp target map(from: r4)
  r4 = saved(14);
  if (r4 != 42) FAIL("saved(14) = %d, expected 42", r4);

  // Generic-mode teams region with a parallel region inside.
  enum { T = 4, P = 8 };
  int out[T][P];
#pragma omp target teams distribute firstprivate(a, t) map(from: out)
  for (int team = 0; team < T; team++) {
    fn_t f = (team & 1) ? t : a;
#pragma omp parallel for
    for (int i = 0; i < P; i++) out[team][i] = f(team * 10 + i);
  }
  for (int team = 0; team < T; team++)
    for (int i = 0; i < P; i++) {
      int x = team * 10 + i, want = (team & 1) ? 3 * x : x + 7;
      if (out[team][i] != want) FAIL("team %d thread %d: %d, expected %d", team, i, out[team][i], want);
    }
  return 0;
}
