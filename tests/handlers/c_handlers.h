/*
 * Typed-FFI handlers written in plain C against <ccshim/xla_ffi.h>, as a
 * kernel author without XLA's C++ headers would write them.  The tests run
 * them in ccshim's embedded runtime, and (test_jax_cross_runtime.py) in
 * jaxlib, and compare.  Each reports FFI version 0.1 in the metadata query,
 * the lowest it needs, so that every JAX from 0.4.35 accepts it.
 */
#ifndef CCSHIM_TESTS_C_HANDLERS_H
#define CCSHIM_TESTS_C_HANDLERS_H

#include "ccshim/xla_ffi.h"

#if defined(__GNUC__)
#define C_HANDLERS_API __attribute__((visibility("default")))
#else
#define C_HANDLERS_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* out = x * factor: one f32 argument, one f32 result of the same shape, a
 * "factor" attribute (F32 scalar). */
C_HANDLERS_API XLA_FFI_Error* c_scale(XLA_FFI_CallFrame* frame);

/* Writes a canonical serialisation of every attribute it receives (names,
 * kinds, dtypes, values, dictionaries recursively) into its one u8 result,
 * zero-padded; no arguments.  Two runtimes that deliver the same attributes
 * produce the same bytes. */
C_HANDLERS_API XLA_FFI_Error* c_attrs_echo(XLA_FFI_CallFrame* frame);

/* Fails with the code given by the "code" attribute (S64 scalar) and the
 * message of the "message" attribute (STRING). */
C_HANDLERS_API XLA_FFI_Error* c_fail(XLA_FFI_CallFrame* frame);

/* A stateful pair: instantiate stores a counter State (type
 * "ccshim.test.Counter", registered on first use); execute adds one to it
 * and writes the count into its one s32 result. */
C_HANDLERS_API XLA_FFI_Error* c_counter_instantiate(XLA_FFI_CallFrame* frame);
C_HANDLERS_API XLA_FFI_Error* c_counter_execute(XLA_FFI_CallFrame* frame);

#ifdef __cplusplus
}
#endif

#endif /* CCSHIM_TESTS_C_HANDLERS_H */
