/* What the ccshim command's --json outputs share. */
#include <stdio.h>

#include "tools.h"

void ccshim_tool_json_string(FILE* f, const char* s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20 || c >= 0x7f) fprintf(f, "\\u%04x", c); /* valid JSON, whatever came */
    else fputc(c, f);
  }
  fputc('"', f);
}
