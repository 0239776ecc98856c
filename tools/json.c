/* What the ccshim command's --json outputs share. */
#include <stdio.h>

#include "tools.h"

/* The length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF), or 0 when there is none. */
static int utf8_length(const unsigned char* s) {
  unsigned char c = s[0];
  int n;
  unsigned lo = 0x80, hi = 0xbf; /* the range of the second byte */
  if (c >= 0xc2 && c <= 0xdf)
    n = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (s[1] < lo || s[1] > hi) return 0;
  for (int k = 2; k < n; k++)
    if (s[k] < 0x80 || s[k] > 0xbf) return 0;
  return n;
}

void ccshim_tool_json_string(FILE* f, const char* text) {
  const unsigned char* s = (const unsigned char*)text;
  fputc('"', f);
  while (*s) {
    unsigned char c = *s;
    int n;
    if (c == '"' || c == '\\') {
      fprintf(f, "\\%c", c);
      s++;
    } else if (c < 0x20 || c == 0x7f) {
      fprintf(f, "\\u%04x", c);
      s++;
    } else if (c < 0x80) {
      fputc(c, f);
      s++;
    } else if ((n = utf8_length(s)) > 0) {
      fwrite(s, 1, (size_t)n, f); /* UTF-8 as it is: JSON's own encoding */
      s += n;
    } else {
      /* A byte that is not UTF-8 (a file name in Latin-1, say) becomes the
       * lone surrogate U+DC80..U+DCFF, as Python's "surrogateescape" does:
       * valid JSON, and the original bytes come back with
       * json.loads(...).encode("utf-8", "surrogateescape"). */
      fprintf(f, "\\udc%02x", c);
      s++;
    }
  }
  fputc('"', f);
}
