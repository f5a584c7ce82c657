// target update on struct members and on sections reached through a pointer member.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 40

struct Grid { int n; double scale; double *v; int tag; };

int main(void) {
  int offdev = 0;
  struct Grid g;
  g.n = N; g.scale = 2.0; g.tag = 1;
  g.v = malloc(N * sizeof(double));
  double *hostv = g.v;
  for (int i = 0; i < N; i++) g.v[i] = i;
#pragma omp target enter data map(to: g) map(to: g.v[0:N])
#pragma omp target map(tofrom: offdev)
  {
    offdev |= omp_is_initial_device();
    for (int i = 0; i < g.n; i++) g.v[i] *= g.scale;
    g.tag = 99;
    g.scale = 3.0;
  }
  if (offdev) FAIL("target region ran on the host");
  if (g.tag != 1 || g.v[1] != 1.0) FAIL("host data changed before update");
#pragma omp target update from(g.tag)
  if (g.tag != 99 || g.scale != 2.0) FAIL("update from(g.tag): tag=%d scale=%g", g.tag, g.scale);
#pragma omp target update from(g.v[0:N/2])
  if (g.v != hostv) FAIL("update of pointee changed host pointer member");
  for (int i = 0; i < N; i++) {
    double want = i < N / 2 ? 2.0 * i : i;
    if (g.v[i] != want) FAIL("g.v[%d]=%g expected %g", i, g.v[i], want);
  }
  g.scale = 10.0;
#pragma omp target update to(g.scale)
#pragma omp target
  for (int i = 0; i < g.n; i++) g.v[i] += g.scale;
#pragma omp target update from(g)
  if (g.v != hostv) FAIL("update from(g) overwrote host pointer member with device address");
  if (g.scale != 10.0 || g.tag != 99) FAIL("update from(g): scale=%g tag=%d", g.scale, g.tag);
#pragma omp target exit data map(from: g.v[0:N]) map(release: g)
  for (int i = 0; i < N; i++)
    if (g.v[i] != 2.0 * i + 10.0) FAIL("final g.v[%d]=%g", i, g.v[i]);
  free(hostv);
  return 0;
}
