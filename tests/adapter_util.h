/*
 * Helpers shared by the adapter tests: frames built from a signature, one
 * call through an adapter, one call through the legacy invoker, and a check
 * of an error's code and message.
 */
#ifndef CCSHIM_TESTS_ADAPTER_UTIL_H
#define CCSHIM_TESTS_ADAPTER_UTIL_H

#include "ccshim/ccshim.h"
#include "check.h"

/* A builder holding one buffer per signature leaf, data from args/rets. */
static inline ccshim_frame_builder* frame_for(const ccshim_signature* sig, void* const* args,
                                              void* const* rets) {
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  for (size_t i = 0; i < sig->num_arg_leaves; i++) {
    const ccshim_shape* s = sig->arg_leaves[i];
    CHECK_OK(ccshim_frame_builder_add_arg(fb, (XLA_FFI_DataType)s->dtype,
                                          s->dtype == 17 ? NULL : args[i], s->rank, s->dims));
  }
  for (size_t i = 0; i < sig->num_ret_leaves; i++) {
    const ccshim_shape* s = sig->ret_leaves[i];
    CHECK_OK(ccshim_frame_builder_add_ret(fb, (XLA_FFI_DataType)s->dtype,
                                          s->dtype == 17 ? NULL : rets[i], s->rank, s->dims));
  }
  return fb;
}

/* Calls the adapter's handler on the frame the builder makes (execute
 * stage) and returns its error, owned by the caller (NULL on success). */
static inline XLA_FFI_Error* call_adapter(const ccshim_adapter* a, ccshim_frame_builder* fb,
                                          ccshim_context* ctx) {
  XLA_FFI_Error* err = NULL;
  ccshim_status st = ccshim_invoke_handler(ccshim_adapter_handler(a), ctx,
                                           XLA_FFI_ExecutionStage_EXECUTE, fb, &err);
  CHECK(st == CCSHIM_OK || st == CCSHIM_EHANDLER);
  return err;
}

/* Checks that err has `code` and a message containing `fragment`; frees. */
static inline void expect_ffi_error(XLA_FFI_Error* err, XLA_FFI_Error_Code code,
                                    const char* fragment) {
  if (err == NULL)
    CHECK_FAIL_("expected %s \"%s\", got success", ccshim_error_code_name(code), fragment);
  CHECK_STR_EQ(ccshim_error_code_name(ccshim_error_code(err)), ccshim_error_code_name(code));
  CHECK_CONTAINS(ccshim_error_message(err), fragment);
  ccshim_error_free(err);
}

/* The same call through the legacy invoker. */
static inline ccshim_legacy_outcome call_legacy(ccshim_legacy_fn fn, int version,
                                                ccshim_platform platform,
                                                const ccshim_signature* sig,
                                                ccshim_tuple_layout layout, void* const* args,
                                                void* const* rets, const char* opaque,
                                                size_t opaque_len, void* stream) {
  ccshim_legacy_call call;
  memset(&call, 0, sizeof call);
  call.fn = fn;
  call.api_version = version;
  call.platform = platform;
  call.signature = sig;
  call.tuple_operands = layout;
  call.args = args;
  call.num_args = sig->num_arg_leaves;
  call.rets = rets;
  call.num_rets = sig->num_ret_leaves;
  call.opaque = opaque;
  call.opaque_len = opaque_len;
  call.stream = stream;
  ccshim_legacy_outcome out;
  CHECK_OK(ccshim_legacy_invoke(&call, &out));
  return out;
}

static inline ccshim_signature* parse_sig(const char* text) {
  ccshim_signature* sig;
  CHECK_OK(ccshim_signature_parse(text, &sig));
  return sig;
}

/* A small deterministic generator (xorshift64*). */
static inline uint64_t next_random(uint64_t* state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1Dull;
}

static inline void fill_floats(float* p, size_t n, uint64_t seed) {
  uint64_t s = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++)
    p[i] = (float)((int64_t)(next_random(&s) % 20001) - 10000) / 1000.0f;
}

#endif /* CCSHIM_TESTS_ADAPTER_UTIL_H */
