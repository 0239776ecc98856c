/*
 * Fuzzes the signature parser with arbitrary text.  Properties: it never
 * crashes; a failure names a status other than OK and leaves a message; a
 * success formats to canonical text that parses again to the same text.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccshim/signature.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char* text = malloc(size + 1);
  memcpy(text, data, size);
  text[size] = '\0';
  ccshim_signature* sig = NULL;
  ccshim_status st = ccshim_signature_parse(text, &sig);
  if (st != CCSHIM_OK) {
    if (sig != NULL || ccshim_last_error()[0] == '\0') abort();
  } else {
    size_t n = ccshim_signature_format(sig, NULL, 0);
    char* canon = malloc(n + 1);
    ccshim_signature_format(sig, canon, n + 1);
    ccshim_signature* again = NULL;
    if (ccshim_signature_parse(canon, &again) != CCSHIM_OK) abort();
    char* twice = malloc(n + 1);
    ccshim_signature_format(again, twice, n + 1);
    if (strcmp(canon, twice) != 0 || again->num_arg_leaves != sig->num_arg_leaves ||
        again->num_ret_leaves != sig->num_ret_leaves)
      abort();
    for (size_t i = 0; i < sig->num_arg_leaves; i++)
      if (sig->arg_leaves[i]->first_leaf != i) abort();
    free(twice);
    free(canon);
    ccshim_signature_free(again);
  }
  ccshim_signature_free(sig);
  free(text);
  return 0;
}
