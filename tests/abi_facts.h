/*
 * One named number about the ABI, as emitted by abi_facts.inc.
 */
#ifndef CCSHIM_TESTS_ABI_FACTS_H
#define CCSHIM_TESTS_ABI_FACTS_H

#include <stddef.h>

typedef struct abi_fact {
  const char* key;
  long long value;
} abi_fact;

/* ccshim's header, and the upstream header under test. */
extern const abi_fact abi_facts_ours[];
extern const size_t abi_facts_ours_count;
extern const abi_fact abi_facts_upstream[];
extern const size_t abi_facts_upstream_count;
extern const int abi_upstream_major, abi_upstream_minor;

#endif
