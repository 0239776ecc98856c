/* `ccshim scan`: written with issue 5; a placeholder refusing to run. */
#include <stdio.h>

#include "tools.h"

int ccshim_scan_main(int argc, char** argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "ccshim scan: not built yet\n");
  return 2;
}
