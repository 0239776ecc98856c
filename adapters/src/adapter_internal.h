/*
 * An adapter: the plan computed once when a kernel is wrapped, and read,
 * never written, by every call (the `pinned` flag aside).
 */
#ifndef CCSHIM_ADAPTER_INTERNAL_H
#define CCSHIM_ADAPTER_INTERNAL_H

#include <ffi.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base_internal.h"
#include "ccshim/ccshim.h"

/* The five distinct calling conventions (base.h's ccshim_legacy_form). */
typedef ccshim_legacy_form form;

/* What a signature says of one buffer.  In a shape-polymorphic signature
 * a named dim is -(1 + v), v its index among the adapter's dim_names, and
 * `lead` says that any number of leading dims come before the `rank`
 * written ones (`[...]`, `[...n]`, `[...b, m, n]`). */
typedef struct leaf_spec {
  int32_t dtype;
  int32_t rank; /* the dims written (after the leading ones, if any) */
  const int64_t* dims;
  int32_t count_var; /* `[...n, ...]`: the name the leading dims' product is, or -1 */
  int32_t lead;      /* 1: leading dims come first */
} leaf_spec;

typedef XLA_FFI_Error* (*ccshim__call_fn)(const ccshim_adapter* a, XLA_FFI_CallFrame* frame);

struct ccshim_adapter {
  /* Read on every call.  `call` comes first: the entry points jump through
   * it.  It is a fast path specialised for the form, chosen at wrap time, or
   * ccshim__adapter_call itself. */
  ccshim__call_fn call;
  ccshim_legacy_fn fn;
  uint8_t form;
  uint8_t is_gpu;
  uint8_t tuple_result;  /* CPU: out is a table of result leaves */
  uint8_t count_checked; /* a signature fixed the buffer counts */
  int32_t num_args;      /* expected leaves when count_checked */
  int32_t num_rets;
  const leaf_spec* specs; /* num_args + num_rets entries, or NULL */
  const int32_t* nested;  /* CPU nested in[] plan, or NULL */
  int32_t nested_len;
  uint32_t opaque_name_len;
  const char* opaque_name;
  /* Read by the metadata query. */
  int ffi_major, ffi_minor;
  XLA_FFI_Handler_Traits traits;
  atomic_int pinned; /* answered a foreign runtime's metadata query */
  /* Cold. */
  ccshim_entry_kind entry;
  XLA_FFI_Handler* handler;
  int32_t slot; /* prebuilt entry index, or -1 */
  ffi_closure* closure;
  ffi_cif cif;
  ffi_type* cif_args[1];
  const char* signature; /* the canonical signature text, or NULL */
  size_t footprint;
  /* A shape-polymorphic signature (named dims, `[...]`): only the general
   * path checks it, binding each name once per call, so it is kept out of
   * the fast paths' cache lines. */
  uint8_t symbolic;
  int32_t num_dim_names;
  const char* const* dim_names;
  const int32_t* dim_operands; /* per name: the arg holding its value, or -1 */
  const int64_t* dim_elements; /* per name: the element of that arg (name[k]), or -1 */
};

/* One call of a wrapped kernel through a typed call frame, every case
 * handled: the general path, and the one every error message comes from. */
XLA_FFI_Error* ccshim__adapter_call(const ccshim_adapter* a, XLA_FFI_CallFrame* frame);

/* The call function for an adapter: a form-specialised fast path that
 * handles the common case and hands anything else to ccshim__adapter_call. */
ccshim__call_fn ccshim__select_call(const ccshim_adapter* a);

/* The error for a kernel's failure, worded as XLA's legacy runtime words it
 * on that platform; releases the status.  NULL when api is NULL. */
XLA_FFI_Error* ccshim__kernel_failed(const ccshim_adapter* a, const XLA_FFI_Api* api,
                                     XlaCustomCallStatus* status);

/* The kernel called in its form's convention: `in` is in[] on CPU and
 * buffers[] on GPU (stream unused on CPU, `out` unused on GPU); v1 forms
 * take no status.  Inline, so that a path whose form is a constant keeps
 * only its own call. */
static inline void ccshim__run_kernel(ccshim_legacy_fn fn, form form, void* out, void** in,
                                      void* stream, const char* opaque, size_t opaque_len,
                                      XlaCustomCallStatus* status) {
  switch (form) {
    case CCSHIM_FORM_CPU_V1: ((ccshim_cpu_v1_fn)fn)(out, (const void**)in); break;
    case CCSHIM_FORM_CPU_V2: ((ccshim_cpu_v2_fn)fn)(out, (const void**)in, status); break;
    case CCSHIM_FORM_CPU_V3:
      ((ccshim_cpu_v3_fn)fn)(out, (const void**)in, opaque, opaque_len, status);
      break;
    case CCSHIM_FORM_GPU_V1: ((ccshim_gpu_v1_fn)fn)(stream, in, opaque, opaque_len); break;
    case CCSHIM_FORM_GPU_V23: ((ccshim_gpu_v2_fn)fn)(stream, in, opaque, opaque_len, status); break;
    case CCSHIM_FORM_NONE: break; /* an adapter always has a form */
  }
}

/* What a freed prebuilt entry points at: answers with an error. */
extern const ccshim_adapter ccshim__freed_adapter;

/* entry.c: binds an adapter to a code address, or lets it go. */
ccshim_status ccshim__entry_bind(ccshim_adapter* a, ccshim_entry_kind kind, int allow_wx);
void ccshim__entry_release(ccshim_adapter* a);

/* The set of live adapters (live.c): added at wrap, removed at free.  add
 * returns -1 when out of memory; has and remove return 0 when a is not
 * there. */
int ccshim__live_add(const ccshim_adapter* a);
int ccshim__live_has(const ccshim_adapter* a);
int ccshim__live_remove(const ccshim_adapter* a);

#endif /* CCSHIM_ADAPTER_INTERNAL_H */
