/*
 * The classic nested layout of CPU in[] (XLA's documented convention and the
 * pre-thunk CPU emitter's): one entry per operand, a tuple operand's entry
 * pointing at a table of its elements, recursively.  Computed once from a
 * signature as a plan, then filled per call from the flat leaf pointers.
 * Shared by the legacy invoker and the adapters; not installed.
 */
#ifndef CCSHIM_LAYOUT_H
#define CCSHIM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "ccshim/base.h"
#include "ccshim/signature.h"

/* A plan of n entries for a block of n pointers: entry k >= 0 means "leaf k's
 * data", entry k < 0 means "the address of block[-k - 1]" (a sub-table).
 * block[0 .. num_operands) is in[] itself.  *plan is malloc'd. */
ccshim_status ccshim__nested_plan(const ccshim_signature* sig, int32_t** plan, size_t* n);

/* Fills block[0..n) from the plan and the operand leaves. */
static inline void ccshim__nested_fill(const int32_t* plan, size_t n, void* const* leaves,
                                       void** block) {
  for (size_t k = 0; k < n; k++)
    block[k] = plan[k] >= 0 ? leaves[plan[k]] : (void*)&block[-plan[k] - 1];
}

#endif /* CCSHIM_LAYOUT_H */
