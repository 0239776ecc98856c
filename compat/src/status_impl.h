/*
 * XlaCustomCallStatus as ccshim lays it out: the layout of XLA's own
 * `struct XlaCustomCallStatus_ { std::optional<std::string> message; }` as
 * built by libstdc++ (C++11 string ABI) on LP64, which is how jaxlib and its
 * GPU plugins are built.  Matching it lets one pair of exported setters serve
 * both ccshim's statuses and XLA's, whose legacy runtime no longer exports
 * setters of its own.  tests/test_status_layout.cc checks this layout against
 * the real std::optional<std::string>.
 *
 * Shared by compat and adapters; not installed.
 */
#ifndef CCSHIM_STATUS_IMPL_H
#define CCSHIM_STATUS_IMPL_H

#include <stddef.h>
#include <string.h>

#include "xla/service/custom_call_status.h"

struct XlaCustomCallStatus_ {
  char* data;    /* std::string::_M_dataplus._M_p */
  size_t length; /* std::string::_M_string_length */
  union {
    char local[16]; /* the short-string buffer, used while length < 16 */
    size_t capacity;
  } u;
  _Bool engaged; /* std::optional::_M_engaged: true means failure */
};

_Static_assert(sizeof(struct XlaCustomCallStatus_) == 40,
               "XlaCustomCallStatus must match std::optional<std::string>");
_Static_assert(offsetof(struct XlaCustomCallStatus_, engaged) == 32,
               "XlaCustomCallStatus must match std::optional<std::string>");

/* A fresh success status, ready for a kernel. */
static inline void ccshim__status_init(XlaCustomCallStatus* s) { s->engaged = 0; }

/* Frees a heap message with the same operator the setter allocated it with. */
void ccshim__status_release(XlaCustomCallStatus* s);

#endif /* CCSHIM_STATUS_IMPL_H */
