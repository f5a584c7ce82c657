// C++ virtual calls on objects constructed inside the target region.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <new>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

#pragma omp begin declare target
struct Shape {
  virtual ~Shape() {}
  virtual int area() const = 0;
  virtual int kind() const { return 0; }
  virtual int on_host() const { return omp_is_initial_device(); }
};
struct Rect : Shape {
  int w, h;
  Rect(int w, int h) : w(w), h(h) {}
  int area() const override { return w * h; }
  int kind() const override { return 1; }
};
struct Square : Rect {
  Square(int s) : Rect(s, s) {}
  int kind() const override { return 2; }
};
struct Tri : Shape {
  int b, h;
  Tri(int b, int h) : b(b), h(h) {}
  int area() const override { return b * h / 2; }
};
static int total(Shape **s, int n) { int t = 0; for (int i = 0; i < n; i++) t += s[i]->area() * 10 + s[i]->kind(); return t; }
#pragma omp end declare target

int main() {
  int t = -1, init = -1, stack_res = -1;
#pragma omp target map(from: t, init, stack_res)
  {
    init = omp_is_initial_device();
    Rect r(3, 4);
    Square sq(5);
    Tri tr(6, 4);
    Shape *arr[3] = {&r, &sq, &tr};
    t = total(arr, 3);
    Shape *h = new Square(2); // heap allocation on the device
    stack_res = h->area() * 10 + h->kind() + 100 * h->on_host();
    delete h;
  }
  if (init != 0) FAIL("region ran on host");
  int want = (12 * 10 + 1) + (25 * 10 + 2) + (12 * 10 + 0);
  if (t != want) FAIL("virtual dispatch total=%d expected %d", t, want);
  if (stack_res != 42) FAIL("heap object virtual call=%d expected 42", stack_res);
  // placement into a device buffer in a parallel region
  int res[32];
#pragma omp target teams distribute parallel for map(from: res)
  for (int i = 0; i < 32; i++) {
    alignas(Rect) unsigned char buf[sizeof(Rect)];
    Shape *s = (i % 2) ? static_cast<Shape *>(new (buf) Rect(i, 2)) : static_cast<Shape *>(new (buf) Square(i));
    res[i] = s->area() + 1000 * s->kind();
    s->~Shape();
  }
  for (int i = 0; i < 32; i++) {
    int w = (i % 2) ? (2 * i + 1000) : (i * i + 2000);
    if (res[i] != w) FAIL("res[%d]=%d expected %d", i, res[i], w);
  }
  return 0;
}
