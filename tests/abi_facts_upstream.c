/* The ABI facts of the c_api.h that jaxlib ships (jax.ffi.include_dir()),
 * compiled from the same list as ccshim's (see abi_facts.inc). */
#include <stddef.h>

#include "abi_facts.h"
#include "xla/ffi/api/c_api.h"

#define FACT(key, value) {key, (long long)(value)},

const abi_fact abi_facts_upstream[] = {
#include "abi_facts.inc"
};
const size_t abi_facts_upstream_count = sizeof abi_facts_upstream / sizeof abi_facts_upstream[0];
const int abi_upstream_major = XLA_FFI_API_MAJOR;
const int abi_upstream_minor = XLA_FFI_API_MINOR;
