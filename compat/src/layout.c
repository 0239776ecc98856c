/*
 * Plans for the classic nested layout of CPU in[]; see layout.h.
 */
#include "layout.h"

#include <stdlib.h>

#include "base_internal.h"

static size_t tables_size(const ccshim_shape* s) {
  if (!s->is_tuple) return 0;
  size_t n = s->num_children;
  for (size_t i = 0; i < s->num_children; i++) n += tables_size(&s->children[i]);
  return n;
}

/* Writes the entry for `s` into plan[at]; tuples claim their table at *next. */
static void place(const ccshim_shape* s, int32_t* plan, size_t at, size_t* next) {
  if (!s->is_tuple) {
    plan[at] = (int32_t)s->first_leaf;
    return;
  }
  size_t table = *next;
  *next += s->num_children;
  plan[at] = -(int32_t)table - 1;
  for (size_t i = 0; i < s->num_children; i++) place(&s->children[i], plan, table + i, next);
}

ccshim_status ccshim__nested_plan(const ccshim_signature* sig, int32_t** plan, size_t* n) {
  size_t total = sig->num_operands;
  for (size_t i = 0; i < sig->num_operands; i++) total += tables_size(&sig->operands[i]);
  if (total > INT32_MAX) return ccshim__fail(CCSHIM_EOVERFLOW, "nested layout: too many tables");
  *plan = malloc((total ? total : 1) * sizeof **plan);
  if (*plan == NULL) return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
  size_t next = sig->num_operands;
  for (size_t i = 0; i < sig->num_operands; i++) place(&sig->operands[i], *plan, i, &next);
  *n = total;
  return CCSHIM_OK;
}
