/*
 * ccshim/ccshim.h -- wrap a legacy XLA custom-call kernel (API version 1, 2
 * or 3; host, CUDA or ROCm) into a typed-FFI handler (API version 4) that XLA
 * and ccshim's embedded runtime can register and call, leaving the kernel
 * itself untouched.  Includes the rest of ccshim's public API.
 *
 *   ccshim_adapter* a;
 *   if (ccshim_wrap((ccshim_legacy_fn)my_kernel, CCSHIM_API_STATUS_RETURNING,
 *                   CCSHIM_PLATFORM_HOST, "(f32[128], f32[2048]) -> f32[2048]",
 *                   NULL, &a) != CCSHIM_OK)
 *     fprintf(stderr, "%s\n", ccshim_last_error());
 *   XLA_FFI_Handler* h = ccshim_adapter_handler(a);   // register h with XLA
 *
 * Each adapter has its own code address (a handler has no user-data
 * pointer): one of a bounded set of prebuilt entry points, or a libffi
 * closure.  XLA has no unregister, so an adapter registered with XLA must
 * live as long as the process; ccshim_adapter_free refuses to free one that
 * XLA or the embedded registry may still call.
 */
#ifndef CCSHIM_CCSHIM_H
#define CCSHIM_CCSHIM_H

#include "ccshim/base.h"
#include "ccshim/legacy.h"
#include "ccshim/runtime.h"
#include "ccshim/signature.h"
#include "ccshim/xla_ffi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ccshim_adapter ccshim_adapter;

/* How an adapter gets its code address. */
typedef enum ccshim_entry_kind {
  /* A prebuilt entry point while any is free, else a libffi closure if
   * closures need no writable-and-executable memory here or allow_wx is
   * set.  The default. */
  CCSHIM_ENTRY_AUTO = 0,
  /* One of CCSHIM_PREBUILT_ENTRIES static functions, each bound to an adapter
   * slot: no generated code at all, and the fastest path. */
  CCSHIM_ENTRY_PREBUILT = 1,
  /* A libffi closure (ffi_closure_alloc + ffi_prep_closure_loc): the
   * general, unbounded mechanism.  With Debian's libffi 3.4 its code lives
   * on a page mapped writable and executable. */
  CCSHIM_ENTRY_CLOSURE = 2,
} ccshim_entry_kind;

#define CCSHIM_PREBUILT_ENTRIES 16384

/* A typed-FFI buffer carries no layout, so an adapter cannot check at run
 * time that a buffer is laid out as its signature says (f32[4,4]{0,1}). */
typedef enum ccshim_layout_policy {
  /* A layout other than row-major in the signature is refused at wrap time
   * (nothing would check it).  The default. */
  CCSHIM_LAYOUTS_REFUSE = 0,
  /* The caller checks, before each call, that the buffers have the
   * signature's layouts: ccshim.jax.legacy_call does at trace time, where
   * it asks XLA for those layouts. */
  CCSHIM_LAYOUTS_CALLER_CHECKS = 1,
} ccshim_layout_policy;

/* Initialise with CCSHIM_WRAP_OPTIONS_INIT, then set what you need:
 *   ccshim_wrap_options o = CCSHIM_WRAP_OPTIONS_INIT;
 *   o.opaque_attr = "config";
 * Every other field's zero is its default. */
typedef struct ccshim_wrap_options {
  /* CCSHIM_WRAP_OPTIONS_STRUCT_SIZE, as the INIT macro sets it (see
   * "Versioned option structs" in base.h). */
  size_t struct_size;
  /* The attribute that carries the opaque bytes: a STRING or a U8/S8 ARRAY.
   * NULL means "opaque".  Absent at call time means an empty opaque. */
  const char* opaque_attr;
  /* CPU in[] layout for tuple operands; NESTED needs a signature. */
  ccshim_tuple_layout tuple_operands;
  /* The FFI API version the handler reports in XLA's metadata query; 0.0
   * means 0.1, which every JAX from 0.4.35 on accepts.  Any other value is
   * reported as given (XLA refuses versions newer than its own). */
  int ffi_major, ffi_minor;
  /* Reported traits.  COMMAND_BUFFER_COMPATIBLE only for kernels that are
   * safe under CUDA-graph capture. */
  XLA_FFI_Handler_Traits traits;
  ccshim_entry_kind entry;
  /* With CCSHIM_ENTRY_AUTO: fall back to closures even where they need a
   * writable-and-executable page (also enabled by the environment variable
   * CCSHIM_ALLOW_WX=1). */
  int allow_wx;
  /* What a signature's layout other than row-major means (appended after
   * the first versioned layout, which ended at allow_wx). */
  ccshim_layout_policy layouts;
} ccshim_wrap_options;

#define CCSHIM_WRAP_OPTIONS_STRUCT_SIZE CCSHIM_STRUCT_SIZE(ccshim_wrap_options, layouts)
#define CCSHIM_WRAP_OPTIONS_INIT \
  CCSHIM_OPTIONS_INIT(ccshim_wrap_options, CCSHIM_WRAP_OPTIONS_STRUCT_SIZE)

/* Wraps a kernel.  api_version is XLA's numbering (1, 2, 3); platform says
 * which calling convention (CPU, or GPU for CUDA and ROCm alike); signature
 * is optional HLO shape text such as "(f32[128], f32[2048]) -> f32[2048]":
 * with it every call checks counts, dtypes and dims, so a kernel with
 * hard-coded sizes gets INVALID_ARGUMENT instead of a buffer overrun.  opts
 * may be NULL for all defaults.  On failure nothing is made, *out is NULL and
 * ccshim_last_error() says why (a signature error names its column). */
CCSHIM_API ccshim_status ccshim_wrap(ccshim_legacy_fn fn, int api_version, ccshim_platform platform,
                                     const char* signature, const ccshim_wrap_options* opts,
                                     ccshim_adapter** out);

/* Wraps the kernel that the registration macros put in ccshim's legacy
 * registry under (name, legacy_platform), where legacy_platform is XLA's
 * spelling ("Host", "CUDA", "ROCM"). */
CCSHIM_API ccshim_status ccshim_wrap_registered(const char* name, const char* legacy_platform,
                                                int api_version, const char* signature,
                                                const ccshim_wrap_options* opts,
                                                ccshim_adapter** out);

/* The typed-FFI handler.  Borrowed: valid until the adapter is freed. */
CCSHIM_API XLA_FFI_Handler* ccshim_adapter_handler(const ccshim_adapter* a);

/* Which mechanism gives this adapter its code address (never AUTO). */
CCSHIM_API ccshim_entry_kind ccshim_adapter_entry(const ccshim_adapter* a);

/* The bytes this adapter occupies on the heap, its closure excluded. */
CCSHIM_API size_t ccshim_adapter_footprint(const ccshim_adapter* a);

/* Frees an adapter, or refuses with CCSHIM_EBUSY when its handler may still
 * be called: it is registered in the embedded runtime (ccshim_unregister it
 * first), or it answered the metadata query of another runtime, i.e. it was
 * registered with XLA, which has no unregister.  A pointer that is not a
 * live adapter (freed already, or never made by ccshim_wrap) is refused with
 * CCSHIM_EINVAL, never freed twice.  Never free an adapter another thread
 * may be calling.  NULL is accepted. */
CCSHIM_API ccshim_status ccshim_adapter_free(ccshim_adapter* a);

/* Whether libffi closures on this system need a page that is writable and
 * executable at once (probed once, by making one closure). */
CCSHIM_API int ccshim_closures_need_wx(void);

/* Bytes of one libffi closure (what CCSHIM_ENTRY_CLOSURE adds per adapter). */
CCSHIM_API size_t ccshim_closure_size(void);

/* Number of prebuilt entry points now free. */
CCSHIM_API size_t ccshim_prebuilt_entries_free(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CCSHIM_CCSHIM_H */
