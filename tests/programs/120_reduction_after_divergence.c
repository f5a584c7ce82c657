// Reductions (+ and max on int, long and double) reached after threads took data-dependent
// paths: target teams distribute parallel for where each iteration runs a loop whose trip count
// depends on the data and some iterations leave early with continue (default geometry and
// num_teams(7) thread_limit(40), a block that is not whole warps); then a parallel region of 40
// threads in a generic kernel with a data-dependent branch just before its end, and a
// worksharing loop reduction inside such a region. Exact results are computed on the host
// (the double values are sums of small multiples of 1/8, exact in any order).
// On the CPU plugin libomp runs the teams construct and caps it by the teams thread limit and
// nthreads-var (it warns on stderr and forms fewer, smaller teams); the ENV lines let it form
// num_teams(7) thread_limit(40) as asked.
// ENV: KMP_TEAMS_THREAD_LIMIT=512
// ENV: OMP_NUM_THREADS=40
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 20011
#define NTHR 40

static int data[N];

// Work of one iteration: trip count data-dependent; returns its int, long and double parts.
#pragma omp declare target
static inline int skip(int v) { return v % 5 == 0; }
static inline void work(int i, int v, int *pi, long *pl, double *pd) {
  int trip = v % 37, si = 0;
  long sl = 0;
  double sd = 0;
  for (int k = 0; k < trip; k++) {
    si += (v >> (k % 8)) & 7;
    sl += (long)v * (k + 1);
    if ((v + k) % 11 == 0) break; // a second, data-dependent way out
    sd += (double)((v + k) % 9) * 0.125;
  }
  *pi = si + (i & 3);
  *pl = sl + 1000000007L * (v & 1);
  *pd = sd;
}
#pragma omp end declare target

typedef struct { int si, mi; long sl, ml; double sd, md; } red_t;

static red_t host_loop(void) {
  red_t r = {0, -1, 0, -1, 0.0, -1.0};
  for (int i = 0; i < N; i++) {
    int v = data[i];
    if (skip(v)) continue;
    int pi; long pl; double pd;
    work(i, v, &pi, &pl, &pd);
    r.si += pi; r.sl += pl; r.sd += pd;
    if (pi > r.mi) r.mi = pi;
    if (pl > r.ml) r.ml = pl;
    if (pd > r.md) r.md = pd;
  }
  return r;
}

static void cmp(red_t g, red_t w, const char *what) {
  if (g.si != w.si) FAIL("%s: int sum %d, expected %d", what, g.si, w.si);
  if (g.sl != w.sl) FAIL("%s: long sum %ld, expected %ld", what, g.sl, w.sl);
  if (g.sd != w.sd) FAIL("%s: double sum %.17g, expected %.17g", what, g.sd, w.sd);
  if (g.mi != w.mi) FAIL("%s: int max %d, expected %d", what, g.mi, w.mi);
  if (g.ml != w.ml) FAIL("%s: long max %ld, expected %ld", what, g.ml, w.ml);
  if (g.md != w.md) FAIL("%s: double max %.17g, expected %.17g", what, g.md, w.md);
}

// Per-thread contribution in the 40-thread region: depends on the thread and the data.
static long thread_part(int t, const int *d) {
  long s = 0;
  if (t % 3 == 0) {
    for (int k = 0; k < d[t] % 200; k++) s += d[(t * 31 + k) % N] & 15;
  } else if (d[t] & 1) {
    s = d[t] % 1000;
  } else {
    s = -t;
  }
  return s;
}

int main(void) {
  unsigned x = 12345;
  for (int i = 0; i < N; i++) {
    x = x * 1103515245u + 12345u;
    data[i] = (int)((x >> 8) % 100000);
  }
  red_t want = host_loop();
  int ondev = 0;

  // (1) default geometry; (2) num_teams(7) thread_limit(40)
  for (int cfg = 0; cfg < 2; cfg++) {
    int si = 0, mi = -1;
    long sl = 0, ml = -1;
    double sd = 0, md = -1;
    if (cfg == 0) {
#pragma omp target teams distribute parallel for map(to: data) map(tofrom: ondev) \
    reduction(+: si, sl, sd) reduction(max: mi, ml, md)
      for (int i = 0; i < N; i++) {
        if (i == 0) ondev = !omp_is_initial_device();
        int v = data[i];
        if (skip(v)) continue;
        int pi; long pl; double pd;
        work(i, v, &pi, &pl, &pd);
        si += pi; sl += pl; sd += pd;
        mi = pi > mi ? pi : mi;
        ml = pl > ml ? pl : ml;
        md = pd > md ? pd : md;
      }
      if (!ondev) FAIL("teams reduction ran on the host");
    } else {
#pragma omp target teams distribute parallel for num_teams(7) thread_limit(40) map(to: data) \
    reduction(+: si, sl, sd) reduction(max: mi, ml, md)
      for (int i = 0; i < N; i++) {
        int v = data[i];
        if (skip(v)) continue;
        int pi; long pl; double pd;
        work(i, v, &pi, &pl, &pd);
        si += pi; sl += pl; sd += pd;
        mi = pi > mi ? pi : mi;
        ml = pl > ml ? pl : ml;
        md = pd > md ? pd : md;
      }
    }
    red_t got = {si, mi, sl, ml, sd, md};
    cmp(got, want, cfg == 0 ? "teams distribute parallel for" : "num_teams(7) thread_limit(40)");
  }

  // (3) Generic kernel, parallel num_threads(40): the branch taken before the end of the region
  // depends on the thread and the data; reduction(+) and reduction(max) over the threads.
  long want_s = 0, want_m = -1000000;
  double want_d = 0;
  for (int t = 0; t < NTHR; t++) {
    long p = thread_part(t, data);
    want_s += p;
    if (p > want_m) want_m = p;
    want_d += 0.125 * (double)(p & 7);
  }
  for (int rep = 0; rep < 3; rep++) {
    long s = -1, m = -1;
    double dsum = -1;
    int nthr = -1, irs = -1;
#pragma omp target map(to: data) map(from: s, m, dsum, nthr, irs) firstprivate(rep)
    {
      long ls = rep, lm = -1000000; // the region's reduction variables live in the sequential part
      double ld = 0;
      int cnt = 0;
#pragma omp parallel num_threads(NTHR) reduction(+: ls, ld, cnt) reduction(max: lm)
      {
        int t = omp_get_thread_num();
        if (t == 0) nthr = omp_get_num_threads();
        long p = 0;
        if (t % 3 == 0) {
          for (int k = 0; k < data[t] % 200; k++) p += data[(t * 31 + k) % N] & 15;
        } else if (data[t] & 1) {
          p = data[t] % 1000;
        } else {
          p = -t;
        }
        ls += p;
        ld += 0.125 * (double)(p & 7);
        cnt++;
        lm = p > lm ? p : lm;
        if (data[(t + rep) % N] % 4 == 0) { // more divergence right before the region's end
          long z = 0;
          for (int k = 0; k < t; k++) z += k;
          if (z < 0) ls = -99999;
        }
      }
      s = ls - rep;
      m = lm;
      dsum = ld;
      irs = cnt;
    }
    if (nthr != NTHR) FAIL("generic: parallel num_threads(%d) got %d threads", NTHR, nthr);
    if (irs != NTHR) FAIL("generic rep %d: %d threads contributed to the reduction, expected %d", rep, irs, NTHR);
    if (s != want_s) FAIL("generic rep %d: long sum %ld, expected %ld", rep, s, want_s);
    if (m != want_m) FAIL("generic rep %d: long max %ld, expected %ld", rep, m, want_m);
    if (dsum != want_d) FAIL("generic rep %d: double sum %.17g, expected %.17g", rep, dsum, want_d);
  }

  // (4) Generic kernel, parallel num_threads(40) with a worksharing-loop reduction after a
  // data-dependent early exit from the loop body.
  {
    int si = 0, mi = -1;
    long sl = 0, ml = -1;
    double sd = 0, md = -1;
    int nthr = -1;
#pragma omp target map(to: data) map(tofrom: si, mi, sl, ml, sd, md, nthr)
    {
      int tsi = 0, tmi = -1;
      long tsl = 0, tml = -1;
      double tsd = 0, tmd = -1;
#pragma omp parallel num_threads(NTHR)
      {
        if (omp_get_thread_num() == 0) nthr = omp_get_num_threads();
#pragma omp for schedule(dynamic, 17) reduction(+: tsi, tsl, tsd) reduction(max: tmi, tml, tmd)
        for (int i = 0; i < N; i++) {
          int v = data[i];
          if (skip(v)) continue;
          int pi; long pl; double pd;
          work(i, v, &pi, &pl, &pd);
          tsi += pi; tsl += pl; tsd += pd;
          tmi = pi > tmi ? pi : tmi;
          tml = pl > tml ? pl : tml;
          tmd = pd > tmd ? pd : tmd;
        }
        if (omp_get_thread_num() % 7 == 3 && data[omp_get_thread_num()] % 2) {
          volatile int spin = 0;
          for (int k = 0; k < 1000; k++) spin += k;
        }
      }
      si = tsi; mi = tmi; sl = tsl; ml = tml; sd = tsd; md = tmd;
    }
    if (nthr != NTHR) FAIL("generic for: parallel num_threads(%d) got %d threads", NTHR, nthr);
    red_t got = {si, mi, sl, ml, sd, md};
    cmp(got, want, "generic parallel(40) for reduction");
  }
  return 0;
}
