/* `ccshim conform`: written with issue 5; a placeholder refusing to run. */
#include <stdio.h>

#include "tools.h"

int ccshim_conform_main(int argc, char** argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "ccshim conform: not built yet\n");
  return 2;
}
