// Large transfers (64 MiB) in both directions, with a partial update in the middle.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N (16u * 1024u * 1024u) // uint32 elements

int main(void) {
  int offdev = 0;
  uint32_t *a = malloc((size_t)N * sizeof(uint32_t));
  if (!a) FAIL("host malloc failed");
  for (uint32_t i = 0; i < N; i++) a[i] = i * 2654435761u;
#pragma omp target enter data map(to: a[0:N])
#pragma omp target teams distribute parallel for map(tofrom: offdev)
  for (uint32_t i = 0; i < N; i++) { a[i] ^= 0xA5A5A5A5u; if (i == 0) offdev = omp_is_initial_device(); }
  if (offdev) FAIL("target region ran on the host");
  if (a[12345] != 12345u * 2654435761u) FAIL("host copy modified before transfer back");
#pragma omp target update from(a[N/2:N/4])
  for (uint32_t i = 0; i < N; i += 4093) {
    uint32_t want = i * 2654435761u;
    if (i >= N / 2 && i < N / 2 + N / 4) want ^= 0xA5A5A5A5u;
    if (a[i] != want) FAIL("after partial update a[%u]=%08x expected %08x", i, a[i], want);
  }
#pragma omp target exit data map(from: a[0:N])
  for (uint32_t i = 0; i < N; i++)
    if (a[i] != ((i * 2654435761u) ^ 0xA5A5A5A5u)) FAIL("a[%u]=%08x", i, a[i]);
  free(a);
  return 0;
}
