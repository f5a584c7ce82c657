// An abstract base class (a pure virtual function, a virtual function with a default, a virtual
// destructor) and derived classes used inside target regions: objects constructed on the device
// (so their vtable pointers are the device's), virtual calls through base pointers and
// references chosen at run time, a call through the base's non-virtual member that dispatches
// virtually, and a derived class of a derived class. At -O0 nothing is devirtualized, and the
// abstract class's vtable references __cxa_pure_virtual, which the device must provide.
// Also in a parallel region: each thread builds its own object and calls through a base pointer.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define NT 8

#pragma omp declare target
struct Shape {
  int id;
  explicit Shape(int i) : id(i) {}
  virtual ~Shape() {}
  virtual int area() const = 0;              // pure virtual
  virtual int sides() const { return 0; }    // overridden by some
  int describe() const { return 1000 * sides() + area() + id; } // dispatches virtually
};
struct Rect : Shape {
  int w, h;
  Rect(int i, int w_, int h_) : Shape(i), w(w_), h(h_) {}
  int area() const override { return w * h; }
  int sides() const override { return 4; }
};
struct Tri : Shape {
  int b, h;
  Tri(int i, int b_, int h_) : Shape(i), b(b_), h(h_) {}
  int area() const override { return b * h / 2; }
  // sides() deliberately not overridden here: Shape's version (0)
};
struct Square : Rect {
  Square(int i, int s) : Rect(i, s, s) {}
  int area() const override { return Rect::area() + 1; } // distinguishable from Rect's
  int sides() const override { return 40; }
};
static int total_area(const Shape *const *v, int n) {
  int s = 0;
  for (int i = 0; i < n; i++) s += v[i]->area();
  return s;
}
static int via_ref(const Shape &s) { return s.describe(); }
#pragma omp end declare target

int main(int argc, char **argv) {
  (void)argv;
  int k = 3 + (argc > 100); // run-time values: the dynamic types are not known at compile time
  int res[8], ondev = 0;
  for (int i = 0; i < 8; i++) res[i] = -1;
  int per_thread[NT], nthr = -1;
  for (int t = 0; t < NT; t++) per_thread[t] = -1;

#pragma omp target map(tofrom: res, ondev) firstprivate(k)
  {
    ondev = !omp_is_initial_device();
    Rect r(1, k, k + 2);       // 3 x 5
    Tri t(2, 2 * k, k + 1);    // 6 x 4 / 2
    Square q(3, k + 1);        // 4 x 4 + 1
    Shape *v[3];
    // order depends on k: no static knowledge of which object is where
    v[k % 3] = &r;
    v[(k + 1) % 3] = &t;
    v[(k + 2) % 3] = &q;
    res[0] = v[0]->area();     // r (k % 3 == 0)
    res[1] = v[1]->sides();    // t: Shape's default 0
    res[2] = v[2]->describe(); // q
    res[3] = total_area(v, 3);
    res[4] = via_ref(*v[1]);
    Rect *rp = k > 0 ? static_cast<Rect *>(&q) : &r;
    res[5] = rp->area() * 100 + rp->sides(); // Square's overrides through a Rect pointer
    res[6] = via_ref(r) + via_ref(t);
  }

#pragma omp target map(tofrom: per_thread, nthr) firstprivate(k)
#pragma omp parallel num_threads(NT)
  {
    int t = omp_get_thread_num();
    if (t == 0) nthr = omp_get_num_threads();
    Rect r(t, t + 1, k);
    Tri tr(t, 2 * t, k + 1);
    const Shape *s = (t + k) % 2 ? static_cast<const Shape *>(&r) : static_cast<const Shape *>(&tr);
    if (t < NT) per_thread[t] = s->describe();
  }

  if (!ondev) FAIL("target region ran on the host");
  // expected values, computed with the same classes on the host
  Rect r(1, k, k + 2);
  Tri t(2, 2 * k, k + 1);
  Square q(3, k + 1);
  int want[7] = {r.area(), t.sides(), q.describe(), r.area() + t.area() + q.area(), t.describe(),
                 q.area() * 100 + q.sides(), r.describe() + t.describe()};
  const int lit[7] = {15, 0, 40000 + 17 + 3, 15 + 12 + 17, 0 + 12 + 2, 1700 + 40, 4000 + 15 + 1 + 12 + 2};
  static const char *what[7] = {"area() through Shape*", "default sides() through Shape*",
                                "describe() (non-virtual calling virtuals)", "sum of area() over Shape* array",
                                "describe() through Shape&", "Square's overrides through Rect*",
                                "describe() of two objects through Shape&"};
  for (int i = 0; i < 7; i++) {
    if (want[i] != lit[i]) FAIL("host computed %d for %s, expected %d", want[i], what[i], lit[i]);
    if (res[i] != want[i]) FAIL("device %s gave %d, expected %d", what[i], res[i], want[i]);
  }
  if (nthr < 1 || nthr > NT) FAIL("parallel num_threads(%d) gave %d threads", NT, nthr);
  for (int th = 0; th < NT; th++) {
    int w = -1;
    if (th < nthr) {
      Rect rr(th, th + 1, k);
      Tri tt(th, 2 * th, k + 1);
      w = (th + k) % 2 ? rr.describe() : tt.describe();
    }
    if (per_thread[th] != w) FAIL("thread %d: virtual call through its Shape* gave %d, expected %d", th, per_thread[th], w);
  }
  return 0;
}
