// C++ virtual calls on objects mapped from the host, for the indirect-call checks
// (build-tools/src/test/indirect.rs): the vtable pointer is translated before a slot is read.
#pragma omp begin declare target indirect
struct Shape {
  virtual ~Shape() {}
  virtual int area() const { return 0; }
};
struct Rect : Shape {
  int w = 2, h = 3;
  int area() const override { return w * h; }
};
#pragma omp end declare target

int main() {
  Rect r;
  Shape *s = &r;
  int a = 0;
#pragma omp target map(to: r) map(from: a)
  a = s->area();
  return a != 6;
}
