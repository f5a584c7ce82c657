// Struct with pointer member: map(s) plus map(s.p[0:n]) attaches the device pointer;
// the host copy of s.p is never overwritten with a device address.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

struct Vec { int n; int *p; int tag; };

int main(void) {
  struct Vec s;
  s.n = 100; s.tag = 5;
  s.p = malloc(s.n * sizeof(int));
  int *orig = s.p;
  for (int i = 0; i < s.n; i++) s.p[i] = i;
  int init = -1, devp_differs = -1;
  long orig_bits = (long)orig; // integer: firstprivate, not translated like a pointer
#pragma omp target map(tofrom: s) map(tofrom: s.p[0:s.n]) map(from: init, devp_differs)
  {
    init = omp_is_initial_device();
    devp_differs = ((long)s.p != orig_bits);
    for (int i = 0; i < s.n; i++) s.p[i] += 1000;
    s.tag = 6;
  }
  if (init != 0) FAIL("region ran on host");
  if (!devp_differs) FAIL("s.p inside the region was the host address (no attachment)");
  if (s.p != orig) FAIL("host s.p overwritten by device pointer after tofrom struct copy-back");
  if (s.tag != 6) FAIL("struct not copied back: tag=%d", s.tag);
  for (int i = 0; i < s.n; i++)
    if (s.p[i] != i + 1000) FAIL("s.p[%d]=%d expected %d", i, s.p[i], i + 1000);
  // Unstructured: enter data struct, then enter data pointee -> attach to present struct.
#pragma omp target enter data map(to: s)
#pragma omp target enter data map(to: s.p[0:s.n])
#pragma omp target
  for (int i = 0; i < s.n; i++) s.p[i] *= 2;
#pragma omp target exit data map(from: s.p[0:s.n])
#pragma omp target exit data map(release: s)
  if (s.p != orig) FAIL("host pointer changed after unstructured attach");
  for (int i = 0; i < s.n; i++)
    if (s.p[i] != 2 * (i + 1000)) FAIL("after enter/exit attach: s.p[%d]=%d", i, s.p[i]);
  // Pointer member mapped via a pointer to the struct
  struct Vec *ps = &s;
#pragma omp target map(to: ps[0:1]) map(tofrom: ps->p[10:5])
  for (int i = 10; i < 15; i++) ps->p[i] = -i;
  for (int i = 0; i < s.n; i++) {
    int want = (i >= 10 && i < 15) ? -i : 2 * (i + 1000);
    if (s.p[i] != want) FAIL("ps->p[%d]=%d expected %d", i, s.p[i], want);
  }
  free(orig);
  return 0;
}
