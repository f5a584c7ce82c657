// `reduction(+: z)` on a `double _Complex` and a `float _Complex` in `target teams distribute
// parallel for`, with several teams and with the default teams, and on both at once. A complex
// is two values in one reduction item (16 and 8 bytes): a reduction that moves or combines only
// the first half, or treats the item as one scalar of its size, loses the imaginary part.
// Values are quarters and halves, so every sum is exact (float included: below 2^24 quarters).
// On the CPU plugin libomp forms the teams; the ENV lines let it form them as asked.
// ENV: KMP_TEAMS_THREAD_LIMIT=8192
// ENV: OMP_NUM_THREADS=8
// The host's reduction code (host fallback and CPU plugin) updates the complex items with
// clang's generic atomics (__atomic_load/__atomic_compare_exchange: 16 bytes, and 8 bytes
// aligned to 4, are not lock-free), which libatomic provides.
// CFLAGS: -latomic
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 200003
#define M 10007 // the mixed loop's iterations (see above)

struct want {
  double re, im;
  float fre, fim;
};

static struct want expected(int n) {
  struct want w = {1.5, -2.0, 0.25f, 3.0f};
  for (int i = 0; i < n; i++) {
    w.re += 0.25 * (i % 8);
    w.im -= 0.5 * (i % 5);
    w.fre += 0.25f * (i % 4);
    w.fim += 0.5f * (i % 3);
  }
  return w;
}

int main(void) {
  struct want w = expected(N);
  double want_re = w.re, want_im = w.im;
  float want_fre = w.fre, want_fim = w.fim;

  int on_device = 0;
  double _Complex z = __builtin_complex(1.5, -2.0);
#pragma omp target teams distribute parallel for num_teams(6) thread_limit(96) reduction(+ : z) \
    map(tofrom: on_device)
  for (int i = 0; i < N; i++) {
    z += __builtin_complex(0.25 * (i % 8), -0.5 * (i % 5));
    if (i == 0) on_device = !omp_is_initial_device();
  }
  if (!on_device) FAIL("the region did not run on the device");
  if (__real__ z != want_re || __imag__ z != want_im)
    FAIL("double complex: (%.2f, %.2f), expected (%.2f, %.2f)", __real__ z, __imag__ z, want_re, want_im);

  float _Complex f = __builtin_complex(0.25f, 3.0f);
#pragma omp target teams distribute parallel for reduction(+ : f)
  for (int i = 0; i < N; i++) f += __builtin_complex(0.25f * (i % 4), 0.5f * (i % 3));
  if (__real__ f != want_fre || __imag__ f != want_fim)
    FAIL("float complex: (%.2f, %.2f), expected (%.2f, %.2f)", (double)__real__ f, (double)__imag__ f,
         (double)want_fre, (double)want_fim);

  // Both in one reduction clause, beside a plain scalar: 32 bytes a thread, which at 128
  // threads no longer fits the team-memory stash that defers the reductions across distribute
  // chunks, so the runtime reduces chunk by chunk (costly on the virtual GPU: fewer iterations).
  w = expected(M);
  want_re = w.re, want_im = w.im, want_fre = w.fre, want_fim = w.fim;
  double _Complex z2 = __builtin_complex(1.5, -2.0);
  float _Complex f2 = __builtin_complex(0.25f, 3.0f);
  long n = 0;
#pragma omp target teams distribute parallel for num_teams(4) thread_limit(128) reduction(+ : z2, f2, n)
  for (int i = 0; i < M; i++) {
    z2 += __builtin_complex(0.25 * (i % 8), -0.5 * (i % 5));
    f2 += __builtin_complex(0.25f * (i % 4), 0.5f * (i % 3));
    n++;
  }
  if (__real__ z2 != want_re || __imag__ z2 != want_im)
    FAIL("mixed, double complex: (%.2f, %.2f), expected (%.2f, %.2f)", __real__ z2, __imag__ z2, want_re, want_im);
  if (__real__ f2 != want_fre || __imag__ f2 != want_fim)
    FAIL("mixed, float complex: (%.2f, %.2f), expected (%.2f, %.2f)", (double)__real__ f2, (double)__imag__ f2,
         (double)want_fre, (double)want_fim);
  if (n != M) FAIL("mixed: count %ld, expected %d", n, M);
  return 0;
}
