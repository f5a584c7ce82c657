// C++: mapping class members through 'this' inside member functions, references, and
// unstructured mapping in constructor/destructor.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

class Field {
public:
  int n;
  double *data;
  double bias;
  explicit Field(int n_) : n(n_), data(new double[n_]), bias(0.5) {
    for (int i = 0; i < n; i++) data[i] = i;
#pragma omp target enter data map(to: this[0:1]) map(to: this->data[0:n])
  }
  ~Field() {
#pragma omp target exit data map(delete: this->data[0:n]) map(delete: this[0:1])
    delete[] data;
  }
  int scale(double f) { // uses the present mapping of this and data
    int onhost = 1;
#pragma omp target map(from: onhost)
    {
      onhost = omp_is_initial_device();
      for (int i = 0; i < n; i++) data[i] = data[i] * f + bias;
    }
    return onhost;
  }
  void pull() {
#pragma omp target update from(this->data[0:n])
  }
};

static void add_ref(int &r, const int &k) {
#pragma omp target map(tofrom: r)
  r += k; // k: firstprivate copy of the referenced value
}

int main() {
  Field f(100);
  double *hostp = f.data;
  if (!omp_target_is_present(f.data, omp_get_default_device())) FAIL("constructor did not map data");
  if (f.scale(2.0)) FAIL("member-function target region ran on the host");
  if (f.data[3] != 3.0) FAIL("device write visible before update");
  f.pull();
  if (f.data != hostp) FAIL("host pointer member changed");
  for (int i = 0; i < 100; i++)
    if (f.data[i] != 2.0 * i + 0.5) FAIL("data[%d]=%g", i, f.data[i]);
  f.bias = 100.0; // host only: the device copy of *this still has 0.5
  f.scale(1.0);
  f.pull();
  if (f.data[0] != 1.0) FAIL("device used host bias without update: data[0]=%g", f.data[0]);
  int r = 1, k = 41;
  add_ref(r, k);
  if (r != 42) FAIL("reference map: r=%d", r);
  return 0;
}
