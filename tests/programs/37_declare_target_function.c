// Functions in declare target: plain, recursive, static, calling other device functions,
// device-local function pointers.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

#pragma omp declare target
static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int square(int x) { return x * x; }
int cube(int x) { return x * square(x); }
typedef int (*fn_t)(int);
int apply(fn_t f, int v) { return f(v); }
int where(void) { return omp_is_initial_device(); }
#pragma omp end declare target

int add1(int x) { return x + 1; }
#pragma omp declare target to(add1)

int main(void) {
  long f = -1;
  int sq = -1, cb = -1, ap = -1, a1 = -1, w = -1;
#pragma omp target map(from: f, sq, cb, ap, a1, w)
  {
    f = fib(20);
    sq = square(12);
    cb = cube(5);
    fn_t tab[2] = {square, cube}; // function addresses taken on the device
    ap = apply(tab[0], 7) + apply(tab[1], 2);
    a1 = add1(41);
    w = where();
  }
  if (w != 0) FAIL("declare target function reports host execution");
  if (f != 6765) FAIL("fib(20)=%ld", f);
  if (sq != 144 || cb != 125) FAIL("square/cube wrong: %d %d", sq, cb);
  if (ap != 49 + 8) FAIL("apply via device function pointers=%d", ap);
  if (a1 != 42) FAIL("add1=%d", a1);
  if (where() != 1) FAIL("host call of where() returned 0");
  // device functions inside a parallel loop
  int out[100];
#pragma omp target teams distribute parallel for map(from: out)
  for (int i = 0; i < 100; i++) out[i] = cube(i % 10) + (int)fib(i % 15);
  for (int i = 0; i < 100; i++)
    if (out[i] != cube(i % 10) + (int)fib(i % 15)) FAIL("out[%d]=%d", i, out[i]);
  return 0;
}
