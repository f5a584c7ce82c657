// CFLAGS: -g
// ompx_dump_mapping_tables() prints every device's mapping table on stdout (whatever
// LIBOMPTARGET_INFO says). The program captures its own stdout in a temporary file around the
// call and checks LLVM's layout: the column header with its exact spacing, and a row for x
// (mapped by enter data: 4 bytes, dynamic count 1, hold count 0) that ends with the name and
// the declaration's file:line:col from the -g map names.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

void ompx_dump_mapping_tables(void);

static char text[65536];

int main(void) {
  if (omp_get_num_devices() < 1) FAIL("no device");
  int x = 7, xline = __LINE__; // x is declared at column 7 of this line
#pragma omp target enter data map(to: x) device(0)

  fflush(stdout);
  FILE *tmp = tmpfile();
  if (!tmp) FAIL("tmpfile failed");
  int saved = dup(1);
  if (saved < 0 || dup2(fileno(tmp), 1) < 0) FAIL("cannot redirect stdout");
  ompx_dump_mapping_tables();
  fflush(stdout);
  if (dup2(saved, 1) < 0) FAIL("cannot restore stdout");
  close(saved);
  rewind(tmp);
  size_t n = fread(text, 1, sizeof text - 1, tmp);
  text[n] = '\0';
  fclose(tmp);

#pragma omp target exit data map(delete: x) device(0)

  if (!strstr(text, "Host Ptr           Target Ptr         Size (B) DynRefCount HoldRefCount Declaration\n"))
    FAIL("no table header in the dump (%zu bytes on stdout)", n);
  const char *file = strrchr(__FILE__, '/');
  file = file ? file + 1 : __FILE__;
  char row[512];
  snprintf(row, sizeof row, " 4        1           0            x at %s:%d:7\n", file, xline);
  if (!strstr(text, row)) FAIL("no row ending with \"%.*s\" in the dump", (int)strlen(row) - 1, row);
  return 0;
}
