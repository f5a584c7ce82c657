// The second unit of the indirect-call checks (see calls.c): no 'declare target indirect'
// entries, so compiled alone the pass leaves it unchanged; in an -foffload-lto device link with
// calls.c its call through `f` is translated.
typedef int (*fn_t)(int);

#pragma omp begin declare target
int apply_in_b(fn_t f, int x) { return f(x) + f(x + 1); }
#pragma omp end declare target
