// A lambda that captures by reference, called inside a target region: the device copy of the
// lambda must refer to the device copies of the captured variables (clang's PTR_AND_OBJ |
// LITERAL | IMPLICIT items), so results come back through the map clauses.
#include <omp.h>
#include <cstdio>
#include <cstdlib>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main() {
  const int n = 64;
  int *a = (int *)malloc(n * sizeof(int));
  for (int i = 0; i < n; i++) a[i] = i;
  long sum = 0;
  int calls = 0, init = -1;
  auto add = [&](int i) { sum += a[i]; calls++; };
#pragma omp target map(tofrom: sum, calls) map(to: a[0:n]) map(from: init)
  {
    init = omp_is_initial_device();
    for (int i = 0; i < n; i++) add(i);
  }
  if (init != 0) FAIL("region ran on the host");
  if (sum != (long)n * (n - 1) / 2) FAIL("sum=%ld expected %ld (captures not translated?)", sum, (long)n * (n - 1) / 2);
  if (calls != n) FAIL("calls=%d expected %d", calls, n);
  // Captures by reference of a mapped array and a scalar, written on the device (a captured
  // pointer variable would hold the host address: only the variables themselves are mapped).
  int b[16];
  for (int i = 0; i < 16; i++) b[i] = i;
  double scale = 3.0;
  auto scale_all = [&]() { for (int i = 0; i < 16; i++) b[i] = (int)(b[i] * scale); scale = -1.0; };
#pragma omp target map(tofrom: b, scale)
  scale_all();
  for (int i = 0; i < 16; i++)
    if (b[i] != 3 * i) FAIL("b[%d]=%d expected %d", i, b[i], 3 * i);
  if (scale != -1.0) FAIL("scale=%g expected -1 (written through the capture on the device)", scale);
  free(a);
  return 0;
}
