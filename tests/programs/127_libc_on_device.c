// C library routines called inside target regions on run-time-sized data, so the compiler
// cannot fold or inline them away: memset, memcpy (overlapping-free, odd sizes and offsets),
// memcmp (equal, first difference at a run-time position, sign of the result), strlen (strings
// built on the device), malloc + free (a per-thread buffer in a parallel region, filled and
// checked, and a buffer freed then allocated again) and calloc + free (zeroed memory, including
// after the same size was malloc'ed, dirtied and freed). Results are compared on the host.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define NT 8

// Error bits set on the device (one per check), with the first failing detail.
enum {
  E_MEMSET = 1, E_MEMCPY = 2, E_MEMCMP_EQ = 4, E_MEMCMP_DIFF = 8, E_MEMCMP_SIGN = 16, E_STRLEN = 32,
  E_MALLOC_NULL = 64, E_MALLOC_DATA = 128, E_CALLOC_NULL = 256, E_CALLOC_ZERO = 512, E_PAR_MALLOC = 1024,
  E_STRLEN_EMPTY = 2048
};
static const char *what[] = {"memset", "memcpy", "memcmp of equal ranges", "memcmp of different ranges",
                             "memcmp sign", "strlen", "malloc returned NULL", "malloc'ed data lost",
                             "calloc returned NULL", "calloc memory not zero", "per-thread malloc in parallel",
                             "strlen of an empty string"};

int main(int argc, char **argv) {
  (void)argv;
  int extra = argc > 100;
  int n = 1000 + 3 * extra, off = 3 + extra, slen = 37 + extra, pos = 611 + extra; // run-time sizes
  unsigned char buf[1100], copy[1100];
  for (int i = 0; i < 1100; i++) buf[i] = (unsigned char)(i * 7 + 1), copy[i] = 0;
  int bits = -1, detail = -1, ondev = 0, memcmp_lt = 99, memcmp_gt = -99, lens[4] = {-1, -1, -1, -1};
  int par_bits = -1, nthr = -1;

#pragma omp target map(tofrom: buf, copy, bits, detail, ondev, memcmp_lt, memcmp_gt, lens) firstprivate(n, off, slen, pos)
  {
    ondev = !omp_is_initial_device();
    int b = 0, d = -1;
    // memset over [off, off + n - 2*off) to 0xA5, the rest untouched
    memset(buf + off, 0xA5, (size_t)(n - 2 * off));
    for (int i = 0; i < 1100; i++) {
      unsigned char want = (i >= off && i < n - off) ? 0xA5 : (unsigned char)(i * 7 + 1);
      if (buf[i] != want) { b |= E_MEMSET; d = i; break; }
    }
    // memcpy of an odd length to an odd offset
    for (int i = 0; i < n; i++) buf[i] = (unsigned char)(i ^ 0x5c);
    memcpy(copy + off, buf + 1, (size_t)(n - off - 1));
    for (int i = 0; i < 1100 && !(b & E_MEMCPY); i++) {
      unsigned char want = (i >= off && i < n - 1) ? (unsigned char)((i - off + 1) ^ 0x5c) : 0;
      if (copy[i] != want) { b |= E_MEMCPY; if (d < 0) d = i; }
    }
    // memcmp: equal ranges, then a difference at a run-time position (both signs)
    if (memcmp(copy + off, buf + 1, (size_t)(n - off - 1)) != 0) b |= E_MEMCMP_EQ;
    copy[off + pos] = (unsigned char)(copy[off + pos] + 1); // copy > buf at pos
    int r = memcmp(copy + off, buf + 1, (size_t)(n - off - 1));
    int r2 = memcmp(buf + 1, copy + off, (size_t)(n - off - 1));
    int r3 = memcmp(copy + off, buf + 1, (size_t)pos); // ends before the difference
    if (r == 0 || r2 == 0 || r3 != 0) b |= E_MEMCMP_DIFF;
    if (r < 0 || r2 > 0) b |= E_MEMCMP_SIGN;
    // memcmp compares as unsigned char: 0x80 > 0x7f
    unsigned char hi[2] = {(unsigned char)(0x80 + extra), 0}, lo[2] = {0x7f, 0};
    memcmp_gt = memcmp(hi, lo, (size_t)(1 + extra)) > 0;
    memcmp_lt = memcmp(lo, hi, (size_t)(1 + extra)) < 0;
    // strlen of strings built on the device
    char s[64];
    for (int i = 0; i < slen; i++) s[i] = (char)('a' + i % 26);
    s[slen] = 0;
    lens[0] = (int)strlen(s);
    lens[1] = (int)strlen(s + 5);
    s[off] = 0;
    lens[2] = (int)strlen(s);
    s[0] = (char)(extra ? 'x' : 0);
    lens[3] = (int)strlen(s);
    if (lens[0] != slen || lens[1] != slen - 5 || lens[2] != off) b |= E_STRLEN;
    if (lens[3] != (extra ? off : 0)) b |= E_STRLEN_EMPTY;
    // malloc + free, then malloc again
    int *p = (int *)malloc((size_t)n * sizeof(int));
    if (!p) b |= E_MALLOC_NULL;
    else {
      for (int i = 0; i < n; i++) p[i] = i * i - 3;
      long sum = 0;
      for (int i = 0; i < n; i++) sum += p[i] - (i * i - 3);
      if (sum != 0 || p[n - 1] != (n - 1) * (n - 1) - 3) b |= E_MALLOC_DATA;
      for (int i = 0; i < n; i++) p[i] = -1; // dirty it before freeing
      free(p);
    }
    // calloc: zeroed even where freed (dirtied) memory of the same size is reused
    int *z = (int *)calloc((size_t)n, sizeof(int));
    if (!z) b |= E_CALLOC_NULL;
    else {
      for (int i = 0; i < n; i++)
        if (z[i] != 0) { b |= E_CALLOC_ZERO; break; }
      z[n - 1] = 5;
      free(z);
    }
    char *c = (char *)calloc((size_t)slen, 3);
    if (!c) b |= E_CALLOC_NULL;
    else {
      for (int i = 0; i < 3 * slen; i++)
        if (c[i]) { b |= E_CALLOC_ZERO; break; }
      free(c);
    }
    free(NULL); // allowed, does nothing
    bits = b;
    detail = d;
  }

  // per-thread malloc/free in a parallel region (each thread its own size and pattern)
#pragma omp target map(tofrom: par_bits, nthr) firstprivate(n)
  {
    int pb = 0;
#pragma omp parallel num_threads(NT) reduction(|: pb)
    {
      int t = omp_get_thread_num();
      if (t == 0) nthr = omp_get_num_threads();
      for (int rep = 0; rep < 3; rep++) {
        int m = n / 4 + 13 * t + rep;
        long *q = (long *)malloc((size_t)m * sizeof(long));
        if (!q) { pb |= 1; continue; }
        memset(q, 0, (size_t)m * sizeof(long));
        for (int i = 0; i < m; i++) q[i] += (long)t * 100000 + i;
        for (int i = 0; i < m; i++)
          if (q[i] != (long)t * 100000 + i) { pb |= 2; break; }
        free(q);
      }
    }
    par_bits = pb;
  }

  if (!ondev) FAIL("target region ran on the host");
  if (bits != 0) {
    int k = 0;
    while (!(bits >> k & 1)) k++;
    FAIL("device %s check failed (bits 0x%x, first bad index %d)", what[k], bits, detail);
  }
  if (memcmp_gt != 1 || memcmp_lt != 1) FAIL("device memcmp does not compare as unsigned char (0x80 vs 0x7f: gt %d lt %d)", memcmp_gt, memcmp_lt);
  // the host sees what the device wrote (the memset range was overwritten by the memcpy source)
  for (int i = 0; i < 1100; i++) {
    unsigned char want = i < n ? (unsigned char)(i ^ 0x5c) : (unsigned char)(i * 7 + 1);
    if (buf[i] != want) FAIL("buf[%d] = %d after the region, expected %d", i, buf[i], want);
  }
  if (copy[off + pos] != (unsigned char)(((pos + 1) ^ 0x5c) + 1)) FAIL("copy[%d] not written back", off + pos);
  if (nthr < 1 || nthr > NT) FAIL("parallel num_threads(%d) gave %d threads", NT, nthr);
  if (par_bits) FAIL("per-thread malloc in a parallel region: %s", par_bits & 1 ? "malloc returned NULL" : "data lost");
  return 0;
}
