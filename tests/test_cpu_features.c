/*
 * The CPU features the adapters choose their code by (base/src/cpu.c),
 * against what the kernel says in /proc/cpuinfo.  The AVX2 gather was
 * chosen by __builtin_cpu_supports, which under zig cc (the wheel's
 * compiler) said "no" on every machine; the answer now comes from CPUID.
 */
#include <stdio.h>
#include <string.h>

#include "base_internal.h"
#include "check.h"

/* 1 when /proc/cpuinfo's first flags line lists `flag`, 0 when not, -1
 * when there is no such line to read. */
static int cpuinfo_has(const char* flag) {
  FILE* f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) return -1;
  static char line[1 << 14];
  int result = -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "flags", 5) != 0) continue;
    result = 0;
    for (char* tok = strtok(strchr(line, ':') + 1, " \t\n"); tok; tok = strtok(NULL, " \t\n"))
      if (strcmp(tok, flag) == 0) result = 1;
    break;
  }
  fclose(f);
  return result;
}

int main(void) {
#if !defined(__x86_64__)
  printf("skipped: AVX2 is an x86-64 feature\n");
  return CHECK_SKIP_CODE;
#else
  int listed = cpuinfo_has("avx2");
  if (listed < 0) {
    printf("skipped: no flags line in /proc/cpuinfo to compare with\n");
    return CHECK_SKIP_CODE;
  }
  CHECK_EQ(ccshim__cpu_has_avx2(), listed);
  printf("avx2: %s, as /proc/cpuinfo says\n", listed ? "yes" : "no");
  return 0;
#endif
}
