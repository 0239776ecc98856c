/*
 * The ABI-drift test: ccshim's XLA FFI header against the c_api.h that the
 * installed jaxlib ships.  Every fact the upstream header yields must exist
 * in ccshim's with the same number; facts that a pre-0.4 upstream header
 * cannot express are counted and named, not silently passed.
 */
#include <string.h>

#include "abi_facts.h"
#include "check.h"

static const abi_fact* find(const abi_fact* facts, size_t n, const char* key) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(facts[i].key, key) == 0) return &facts[i];
  return NULL;
}

int main(void) {
  size_t compared = 0, mismatches = 0;
  for (size_t i = 0; i < abi_facts_upstream_count; i++) {
    const abi_fact* up = &abi_facts_upstream[i];
    const abi_fact* ours = find(abi_facts_ours, abi_facts_ours_count, up->key);
    if (ours == NULL) {
      fprintf(stderr, "drift: upstream has %s = %lld, ccshim has no such fact\n", up->key,
              up->value);
      mismatches++;
      continue;
    }
    if (ours->value != up->value) {
      fprintf(stderr, "drift: %s is %lld upstream, %lld in ccshim\n", up->key, up->value,
              ours->value);
      mismatches++;
    }
    compared++;
  }
  size_t only_ours = 0;
  for (size_t i = 0; i < abi_facts_ours_count; i++)
    if (!find(abi_facts_upstream, abi_facts_upstream_count, abi_facts_ours[i].key)) only_ours++;
  printf(
      "abi drift: compared %zu facts with jaxlib's c_api.h (FFI API %d.%d): "
      "%zu differ; %zu facts of ccshim's 0.4 header have no counterpart "
      "in a %d.%d header\n",
      compared, abi_upstream_major, abi_upstream_minor, mismatches, only_ours, abi_upstream_major,
      abi_upstream_minor);
  CHECK_EQ(mismatches, 0);
  CHECK_GE(compared, 150);
  if (abi_upstream_minor >= 4) CHECK_EQ(only_ours, 5); /* the @0.1 constants */
  return 0;
}
