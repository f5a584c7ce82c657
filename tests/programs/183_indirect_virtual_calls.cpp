// LLVM-REF: fails (clang-22 alone reads the host's vtable and calls the host version)
// C++ virtual calls on objects created on the host and mapped to the device, with the classes
// 'declare target indirect': the object's vtable pointer is the host's, so the device code
// translates it (the runtime's table maps every slot of each indirect vtable) and calls the
// device's version of the override. Each override reports omp_is_initial_device() and counts
// its calls in a declare target global.
#include <omp.h>
#include <cstdio>
#include <cstdlib>
#include <new>
#define FAIL(...) do { std::fprintf(stderr, __VA_ARGS__); std::fputc('\n', stderr); std::exit(1); } while (0)

int calls = 0;
#pragma omp declare target to(calls)

#pragma omp begin declare target indirect
struct Shape {
  virtual ~Shape() {}
  virtual double area() const = 0;
  virtual int sides() const { return 0; }
};
struct Rect : Shape {
  double w, h;
  Rect(double w, double h) : w(w), h(h) {}
  double area() const override {
#pragma omp atomic
    calls++;
    return w * h + 1000 * omp_is_initial_device();
  }
  int sides() const override { return 4; }
};
struct Square : Rect {
  explicit Square(double s) : Rect(s, s) {}
  int sides() const override { return 40 + 1000 * omp_is_initial_device(); }
};
struct Circle : Shape {
  double r;
  explicit Circle(double r) : r(r) {}
  double area() const override {
#pragma omp atomic
    calls++;
    return 3.0 * r * r + 1000 * omp_is_initial_device();
  }
};
#pragma omp end declare target

#pragma omp begin declare target
double total_area(const Shape &a, const Shape &b) { return a.area() + b.area(); }
#pragma omp end declare target

int main() {
  Rect rect(2, 3);
  Square square(4);
  Circle circle(1);
  double a[3] = {0, 0, 0};
  int s[3] = {-1, -1, -1};
  int pick[3] = {2, 0, 1};
#pragma omp target map(to: rect, square, circle, pick) map(from: a, s)
  for (int i = 0; i < 3; i++) {
    const Shape *shape = pick[i] == 0 ? static_cast<const Shape *>(&rect)
                       : pick[i] == 1 ? static_cast<const Shape *>(&square)
                                      : static_cast<const Shape *>(&circle);
    a[i] = shape->area();
    s[i] = shape->sides();
  }
  if (a[0] != 3.0 || a[1] != 6.0 || a[2] != 16.0) FAIL("areas %g %g %g, expected 3 6 16", a[0], a[1], a[2]);
  if (s[0] != 0 || s[1] != 4 || s[2] != 40) FAIL("sides %d %d %d, expected 0 4 40", s[0], s[1], s[2]);

  // Objects made with new, mapped as sections; a virtual call inside a declare target function.
  Rect *heap_rect = new Rect(5, 1);
  Circle *heap_circle = new Circle(2);
  double t = 0;
#pragma omp target map(to: heap_rect[0:1], heap_circle[0:1]) map(from: t)
  t = total_area(*heap_rect, *heap_circle);
  if (t != 5.0 + 12.0) FAIL("total_area %g, expected 17", t);

  // Many objects, one virtual call per thread.
  enum { N = 128 };
  Square *squares = static_cast<Square *>(std::malloc(N * sizeof(Square)));
  for (int i = 0; i < N; i++) new (&squares[i]) Square(i);
  double out[N];
#pragma omp target teams distribute parallel for map(to: squares[0:N]) map(from: out)
  for (int i = 0; i < N; i++) {
    const Shape *shape = &squares[i];
    out[i] = shape->area();
  }
  for (int i = 0; i < N; i++)
    if (out[i] != double(i) * i) FAIL("squares[%d].area() = %g, expected %d", i, out[i], i * i);

  if (calls != 0) FAIL("the host copy of calls changed (%d): a host version ran", calls);
#pragma omp target update from(calls)
  if (calls != 3 + 2 + N) FAIL("device calls = %d, expected %d", calls, 3 + 2 + N);
  delete heap_rect;
  delete heap_circle;
  std::free(squares);
  return 0;
}
