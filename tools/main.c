/*
 * The ccshim command, one subcommand a file:
 *
 *   conform   legacy vs typed, side by side (tools/conform/)
 *   scan      the legacy inventory of a tree (tools/scan/)
 *   rewrite   exported programs, their legacy calls made typed (ccshim.export)
 *   legacy    any command with zero-change mode on (ccshim._legacy_cmd)
 *   port      a project's legacy targets made typed, as a patch (ccshim.port)
 *   bench     the adapter's cost (bench/bench.c)
 *   version   the library's version
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "ccshim/ccshim.h"
#include "tools.h"

static void usage(FILE* to) {
  fprintf(to,
          "usage: ccshim COMMAND [ARGS]\n\n"
          "  conform LIB SYMBOL --api N --signature SIG [options]\n"
          "  conform --manifest FILE [--json]\n"
          "                 run legacy kernels through the legacy invoker and through an\n"
          "                 adapter in the embedded typed runtime (or a native port), and\n"
          "                 compare; `ccshim conform --help` lists every option\n"
          "  scan DIR [--json]\n"
          "                 find legacy custom calls in C, C++, CUDA, HIP, Python, Cython,\n"
          "                 and in exported JAX programs\n"
          "  rewrite IN OUT [--platform P] [--to KIND] [--manifest FILE] [--check\n"
          "          --kernels MODULE[:ATTR]] ...\n"
          "                 a jax.export artifact or StableHLO module with its legacy custom\n"
          "                 calls made typed-FFI calls on ccshim's targets (Python with JAX)\n"
          "  legacy [--strict] [--report FILE] -- COMMAND [ARGS...]\n"
          "                 run COMMAND (python -m pytest ..., a script) with zero-change mode\n"
          "                 on in every Python it starts (Python with JAX and ccshim)\n"
          "  port TREE... [--apply]\n"
          "                 print a patch that ports a project's legacy targets to typed\n"
          "                 FFI handlers (Python with libcst); what it cannot port is said\n"
          "                 on stderr\n"
          "  bench [--json FILE] [--quick] [--no-instructions]\n"
          "                 the adapter's cost against a direct call and a hand-written handler\n"
          "  version        print ccshim's version\n");
}

int main(int argc, char** argv) {
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const char* cmd = argv[1];
  if (!strcmp(cmd, "version")) {
    printf("ccshim %s\n", ccshim_version());
    return 0;
  }
  if (!strcmp(cmd, "bench")) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0) n = (ssize_t)strlen(strncpy(self, argv[0], sizeof self - 1));
    self[n] = '\0';
    return ccshim_bench_main(self, argc - 2, argv + 2);
  }
  if (!strcmp(cmd, "conform")) return ccshim_conform_main(argc - 2, argv + 2);
  if (!strcmp(cmd, "scan")) return ccshim_scan_main(argc - 2, argv + 2);
  if (!strcmp(cmd, "rewrite"))
    return ccshim_python_main("rewrite", "ccshim.export", argc - 2, argv + 2);
  if (!strcmp(cmd, "legacy"))
    return ccshim_python_main("legacy", "ccshim._legacy_cmd", argc - 2, argv + 2);
  if (!strcmp(cmd, "port")) return ccshim_python_main("port", "ccshim.port", argc - 2, argv + 2);
  fprintf(stderr, "ccshim: unknown command '%s'\n\n", cmd);
  usage(stderr);
  return 2;
}
