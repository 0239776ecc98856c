/*
 * The handlers of upstream_handlers.cc, declared against ccshim's header.
 * (That file includes XLA's own headers, which cannot share a translation
 * unit with ccshim's; the two agree by ABI, which test_abi_drift checks.)
 */
#ifndef CCSHIM_TESTS_UPSTREAM_HANDLERS_H
#define CCSHIM_TESTS_UPSTREAM_HANDLERS_H

#include "ccshim/xla_ffi.h"

#ifdef __cplusplus
extern "C" {
#endif

XLA_FFI_Error* up_scale(XLA_FFI_CallFrame* frame);
XLA_FFI_Error* up_attrs(XLA_FFI_CallFrame* frame);
XLA_FFI_Error* up_fail(XLA_FFI_CallFrame* frame);
XLA_FFI_Error* up_sum_all(XLA_FFI_CallFrame* frame);
XLA_FFI_Error* up_stream(XLA_FFI_CallFrame* frame);
XLA_FFI_Error* up_counter_instantiate(XLA_FFI_CallFrame* frame);
XLA_FFI_Error* up_counter_execute(XLA_FFI_CallFrame* frame);
XLA_FFI_Error* up_register_types(const XLA_FFI_Api* api);
XLA_FFI_TypeId* up_counter_type_id(void);
const XLA_FFI_TypeInfo* up_counter_type_info(void);
int up_api_minor(void);

#ifdef __cplusplus
}
#endif

#endif /* CCSHIM_TESTS_UPSTREAM_HANDLERS_H */
