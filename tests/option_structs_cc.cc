// The INIT macros from C++17, which has no designated initialisers: the
// struct_size they set and the zero they leave everywhere else, reported to
// test_option_structs.c.
#include "ccshim/ccshim.h"

extern "C" int ccshim_test_cxx_init_ok(void) {
  ccshim_wrap_options w = CCSHIM_WRAP_OPTIONS_INIT;
  ccshim_context_options c = CCSHIM_CONTEXT_OPTIONS_INIT;
  return w.struct_size == CCSHIM_WRAP_OPTIONS_STRUCT_SIZE && w.opaque_attr == nullptr &&
         w.allow_wx == 0 && c.struct_size == CCSHIM_CONTEXT_OPTIONS_STRUCT_SIZE &&
         c.platform == nullptr && c.alloc_user == nullptr;
}
