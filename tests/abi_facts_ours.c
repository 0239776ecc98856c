/* The ABI facts of ccshim's own header (see abi_facts.inc). */
#include <stddef.h>

#include "abi_facts.h"
#include "ccshim/xla_ffi.h"

#define ABI_FACTS_OURS 1
#define FACT(key, value) {key, (long long)(value)},

const abi_fact abi_facts_ours[] = {
#include "abi_facts.inc"
};
const size_t abi_facts_ours_count = sizeof abi_facts_ours / sizeof abi_facts_ours[0];
