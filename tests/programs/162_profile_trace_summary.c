// ENV: RUSTOMP_SUMMARY=1
// EXPECT-STDERR: rustomp run summary (RUSTOMP_SUMMARY): 1 device(s) used
// EXPECT-STDERR:   host to device    3.9 KiB in 1 copies
// EXPECT-STDERR:   device to host    3.9 KiB in 1 copies
// EXPECT-STDERR:   mapping table     peak 2 entries
// LLVM-REF: fails (LIBOMPTARGET_PROFILE gives LLVM's own time trace, without these events; RUSTOMP_SUMMARY is ours)
// LIBOMPTARGET_PROFILE=<file> writes a Chrome trace of the run, and RUSTOMP_SUMMARY=1 a table per
// device at exit. The program runs itself again with the trace on (the trace is written at
// exit), then reads the file: a JSON object whose traceEvents hold the kernel launch (its name,
// teams, threads), the transfers with their sizes, the allocations and the data phases. Its own
// run (the parent) prints the summary, which the EXPECT lines check.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define N 1000

static int in[N], out[N];

static void region(void) {
  for (int i = 0; i < N; i++) in[i] = i;
  #pragma omp target teams num_teams(2) thread_limit(64) map(to: in) map(from: out)
  for (int i = 0; i < N; i++) out[i] = 2 * in[i];
  for (int i = 0; i < N; i++) if (out[i] != 2 * i) FAIL("out[%d] = %d", i, out[i]);
}

static const char *const wanted[] = {
  "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[",
  "\"cat\":\"kernel\",\"ph\":\"X\"",
  "\"name\":\"__omp_offloading_",
  "\"teams\":\"2\",\"threads\":\"64\"",
  "\"name\":\"host to device\",\"cat\":\"transfer\"",
  "\"name\":\"device to host\",\"cat\":\"transfer\"",
  "\"bytes\":\"4000\"",
  "\"name\":\"alloc\",\"cat\":\"memory\"",
  "\"name\":\"load image\",\"cat\":\"image\"",
  "\"name\":\"map in (target)\",\"cat\":\"data\"",
  "\"name\":\"map out (target)\",\"cat\":\"data\"",
};

int main(int argc, char **argv) {
  if (argc > 1) {  // the child: run with the trace on
    region();
    return 0;
  }
  char path[64], command[4200];
  snprintf(path, sizeof path, "/tmp/rustomp-trace-%d.json", (int)getpid());
  // The child must not print a summary of its own: the parent's is the one checked.
  snprintf(command, sizeof command, "RUSTOMP_SUMMARY= LIBOMPTARGET_PROFILE=%s '%s' child", path, argv[0]);
  if (system(command) != 0) FAIL("the traced run failed");
  FILE *f = fopen(path, "r");
  if (!f) FAIL("no trace at %s", path);
  static char text[1 << 20];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  remove(path);
  text[n] = 0;
  for (size_t i = 0; i < sizeof wanted / sizeof *wanted; i++)
    if (!strstr(text, wanted[i])) FAIL("the trace lacks %s:\n%.2000s", wanted[i], text);
  if (n < 2 || strcmp(text + n - 3, "]}\n") != 0) FAIL("the trace does not end its JSON object");
  region();
  return 0;
}
