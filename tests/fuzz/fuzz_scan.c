/*
 * Fuzzes `ccshim scan`'s reader with arbitrary source text: unterminated
 * strings and comments, unbalanced parentheses, macros cut short (Python
 * and Cython are ccshim.scan's: fuzz_scan_reader.py).  The first byte picks
 * the language (by file name); the rest is the file.  Properties: it never
 * crashes or reads out of bounds, and a text file (no NUL byte) always scans
 * (exit status 0), in both output forms.  Output goes to /dev/null.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* const names[] = {"k.cc", "k.c", "k.cu", "k.hip"};
  static int quiet;
  if (!quiet) {
    quiet = freopen("/dev/null", "w", stdout) != NULL;
  }
  if (size == 0) return 0;
  const char* name = names[data[0] % 4];
  char* text = malloc(size);
  memcpy(text, data + 1, size - 1);
  for (size_t i = 0; i + 1 < size; i++)
    if (text[i] == '\0') text[i] = ' '; /* binary files are refused, not read */
  if (ccshim_scan_buffer(name, text, size - 1, data[0] & 0x80) != 0) abort();
  free(text);
  return 0;
}
