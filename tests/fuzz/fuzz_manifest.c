/*
 * Fuzzes `ccshim conform --manifest`'s reading of a manifest: lines of any
 * length (the fuzzer's -max_len reaches past the 8191 bytes lines were once
 * cut at), quotes, comments, every option with good and bad values, NUL
 * bytes.  Targets are parsed, never run.  Properties: no crash, no sanitizer
 * report, and an exit status of 0, 1 or 2.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static int quiet;
  if (!quiet) quiet = freopen("/dev/null", "w", stdout) != NULL;
  int rc = ccshim_conform_parse_manifest((const char*)data, size);
  if (rc < 0 || rc > 2) abort();
  return 0;
}
