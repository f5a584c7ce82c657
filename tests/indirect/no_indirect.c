// A program without 'declare target indirect' functions that still calls through function
// pointers in device code (a table built on the device): `cargo xtask test` checks that its
// device code is the same with and without the pass plugin ("no cost when unused").
typedef int (*fn_t)(int);

#pragma omp begin declare target
int twice(int x) { return 2 * x; }
int thrice(int x) { return 3 * x; }
int apply(fn_t f, int x) { return f(x); }
#pragma omp end declare target

int main(void) {
  enum { N = 64 };
  int out[N];
#pragma omp target teams distribute parallel for map(from: out)
  for (int i = 0; i < N; i++) {
    fn_t table[2] = {twice, thrice};
    out[i] = apply(table[i & 1], i);
  }
  return out[3] != 9;
}
