// Nested user-defined mappers: struct containing structs that have their own mapper.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

typedef struct { int len; int *buf; } Inner;
#pragma omp declare mapper(Inner in) map(in, in.buf[0:in.len])

typedef struct { Inner a, b; int k; float *w; int nw; } Outer;
#pragma omp declare mapper(Outer o) map(o.a, o.b, o.k, o.nw) map(o.w[0:o.nw])

int main(void) {
  Outer o;
  o.a.len = 16; o.b.len = 8; o.k = 3; o.nw = 4;
  o.a.buf = malloc(16 * sizeof(int));
  o.b.buf = malloc(8 * sizeof(int));
  o.w = malloc(4 * sizeof(float));
  for (int i = 0; i < 16; i++) o.a.buf[i] = i;
  for (int i = 0; i < 8; i++) o.b.buf[i] = 100 + i;
  for (int i = 0; i < 4; i++) o.w[i] = 0.5f * i;
  int *pa = o.a.buf, *pb = o.b.buf;
  float *pw = o.w;
  int init = -1;
#pragma omp target map(tofrom: o) map(from: init)
  {
    init = omp_is_initial_device();
    for (int i = 0; i < o.a.len; i++) o.a.buf[i] *= o.k;
    for (int i = 0; i < o.b.len; i++) o.b.buf[i] += o.a.buf[i];
    for (int i = 0; i < o.nw; i++) o.w[i] += 1.0f;
    o.k = 9;
  }
  if (init != 0) FAIL("region ran on host");
  if (o.a.buf != pa || o.b.buf != pb || o.w != pw) FAIL("host pointers overwritten by mapper");
  if (o.k != 9) FAIL("o.k=%d", o.k);
  for (int i = 0; i < 16; i++)
    if (o.a.buf[i] != 3 * i) FAIL("o.a.buf[%d]=%d", i, o.a.buf[i]);
  for (int i = 0; i < 8; i++)
    if (o.b.buf[i] != 100 + i + 3 * i) FAIL("o.b.buf[%d]=%d", i, o.b.buf[i]);
  for (int i = 0; i < 4; i++)
    if (o.w[i] != 0.5f * i + 1.0f) FAIL("o.w[%d]=%g", i, o.w[i]);
  // array of Inner mapped with the Inner mapper applied per element
  Inner arr[3];
  for (int k = 0; k < 3; k++) {
    arr[k].len = 5;
    arr[k].buf = malloc(5 * sizeof(int));
    for (int i = 0; i < 5; i++) arr[k].buf[i] = k;
  }
#pragma omp target map(tofrom: arr[0:3])
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < arr[k].len; i++) arr[k].buf[i] = arr[k].buf[i] * 10 + i;
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < 5; i++)
      if (arr[k].buf[i] != k * 10 + i) FAIL("arr[%d].buf[%d]=%d", k, i, arr[k].buf[i]);
  return 0;
}
