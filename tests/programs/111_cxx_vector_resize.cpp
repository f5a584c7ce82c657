// C++ std::vector storage mapped through data(): between regions the vector grows and its
// storage moves, so each region maps the current buffer; an unstructured mapping of the old
// buffer is released before the resize and the new buffer is mapped afresh; a vector of
// vectors is mapped row by row through a pointer array.
#include <omp.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define FAIL(...) do { std::fprintf(stderr, __VA_ARGS__); std::fputc('\n', stderr); std::exit(1); } while (0)

int main() {
  int dev = omp_get_default_device();
  int offdev = 0;
  std::vector<long> v(100);
  for (size_t i = 0; i < v.size(); i++) v[i] = (long)i;
  for (int round = 0; round < 4; round++) {
    long *p = v.data();
    size_t n = v.size();
#pragma omp target map(tofrom: p[0:n]) map(tofrom: offdev)
    {
      offdev |= omp_is_initial_device();
      for (size_t i = 0; i < n; i++) p[i] += 1000;
    }
    if (offdev) FAIL("region ran on the host");
    if (omp_target_is_present(p, dev)) FAIL("round %d: buffer still mapped after the region", round);
    size_t old = v.size();
    v.resize(old * 3); // storage moves
    for (size_t i = old; i < v.size(); i++) v[i] = (long)i;
  }
  // element i got +1000 once for every round in which it existed
  for (size_t i = 0; i < v.size(); i++) {
    int rounds = i < 100 ? 4 : i < 300 ? 3 : i < 900 ? 2 : i < 2700 ? 1 : 0;
    if (v[i] != (long)i + 1000L * rounds) FAIL("v[%zu]=%ld expected %ld", i, v[i], (long)i + 1000L * rounds);
  }
  // unstructured: map, release before reallocation, map the new storage
  std::vector<int> w(10, 1);
  int *wp = w.data();
#pragma omp target enter data map(to: wp[0:10])
#pragma omp target
  for (int i = 0; i < 10; i++) wp[i] = 2;
#pragma omp target exit data map(from: wp[0:10])
  w.resize(1000, 3);
  wp = w.data();
  size_t wn = w.size();
#pragma omp target enter data map(to: wp[0:wn])
#pragma omp target
  for (size_t i = 0; i < wn; i++) wp[i] *= 10;
#pragma omp target exit data map(from: wp[0:wn])
  for (size_t i = 0; i < wn; i++)
    if (w[i] != (i < 10 ? 20 : 30)) FAIL("w[%zu]=%d", i, w[i]);
  // vector of vectors through an array of row pointers
  std::vector<std::vector<double>> m(5);
  std::vector<double *> rows(5);
  for (int r = 0; r < 5; r++) {
    m[r].assign(3 + r, r + 0.5);
    rows[r] = m[r].data();
  }
  double **rp = rows.data();
#pragma omp target enter data map(to: rp[0:5])
  for (int r = 0; r < 5; r++) {
#pragma omp target enter data map(to: rp[r][0:3 + r])
  }
#pragma omp target
  for (int r = 0; r < 5; r++)
    for (int c = 0; c < 3 + r; c++) rp[r][c] = rp[r][c] * 2 + c;
  for (int r = 0; r < 5; r++) {
#pragma omp target exit data map(from: rp[r][0:3 + r])
  }
#pragma omp target exit data map(delete: rp[0:5])
  for (int r = 0; r < 5; r++) {
    if (rows[r] != m[r].data()) FAIL("host row pointer %d replaced", r);
    for (int c = 0; c < 3 + r; c++)
      if (m[r][c] != (r + 0.5) * 2 + c) FAIL("m[%d][%d]=%g", r, c, m[r][c]);
  }
  return 0;
}
