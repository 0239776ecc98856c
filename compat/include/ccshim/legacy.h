/*
 * ccshim/legacy.h -- the legacy side: XLA's custom-call API versions 1-3,
 * the legacy target registry the drop-in macros fill, XlaCustomCallStatus,
 * and the legacy invoker, which calls a kernel exactly as XLA's legacy
 * runtime did and is the reference side of every conformance check.
 *
 *   version  CPU                                   GPU (CUDA and ROCm)
 *   1        f(out, in)                             f(stream, buffers, opaque, len)
 *   2        f(out, in, status)                     f(stream, buffers, opaque, len, status)
 *   3        f(out, in, opaque, len, status)        same as 2
 */
#ifndef CCSHIM_LEGACY_H
#define CCSHIM_LEGACY_H

#include "ccshim/base.h"
#include "ccshim/signature.h"
#include "xla/service/custom_call_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A legacy kernel of any form, as a generic function pointer.  ccshim casts
 * it back to the form's exact type before calling it. */
typedef void (*ccshim_legacy_fn)(void);

/* The exact function types of each form.  GPU streams (CUstream,
 * hipStream_t) are pointers and travel as void*. */
typedef void (*ccshim_cpu_v1_fn)(void* out, const void** in);
typedef void (*ccshim_cpu_v2_fn)(void* out, const void** in, XlaCustomCallStatus* status);
typedef void (*ccshim_cpu_v3_fn)(void* out, const void** in, const char* opaque, size_t opaque_len,
                                 XlaCustomCallStatus* status);
typedef void (*ccshim_gpu_v1_fn)(void* stream, void** buffers, const char* opaque,
                                 size_t opaque_len);
typedef void (*ccshim_gpu_v2_fn)(void* stream, void** buffers, const char* opaque,
                                 size_t opaque_len, XlaCustomCallStatus* status);

/* ccshim_api_version and ccshim_platform, with their names, are in
 * ccshim/base.h: one vocabulary for every part of ccshim. */

/* How a CPU kernel's in[] holds tuple operands. */
typedef enum ccshim_tuple_layout {
  /* One entry per leaf buffer, depth first: what XLA's CPU runtime has
   * passed since the thunk runtime (jaxlib 0.4.32). */
  CCSHIM_TUPLES_FLAT = 0,
  /* One entry per operand; a tuple operand's entry points at a table of its
   * elements, nested tuples at nested tables: XLA's documented classic
   * layout and the pre-thunk CPU emitter's.  Needs a signature. */
  CCSHIM_TUPLES_NESTED = 1,
} ccshim_tuple_layout;

/* ---------------------------------------------------------------------------
 * XlaCustomCallStatus.  ccshim's status object has the layout of XLA's own
 * (a libstdc++ std::optional<std::string>, 40 bytes on LP64), so the two
 * setters libccshim exports work on statuses made by XLA's legacy runtime
 * too: jaxlib exports no setters of its own, and a legacy kernel loaded
 * into JAX finds ccshim's.  Statuses are set up on the caller's storage.
 * ------------------------------------------------------------------------ */

#define CCSHIM_LEGACY_STATUS_SIZE 40

typedef union ccshim_legacy_status_storage {
  void* align_;
  unsigned char bytes[CCSHIM_LEGACY_STATUS_SIZE];
} ccshim_legacy_status_storage;

/* Makes a success status in `storage` and returns it. */
CCSHIM_API XlaCustomCallStatus* ccshim_legacy_status_init(ccshim_legacy_status_storage* storage);
/* The failure message (borrowed, NUL-terminated) and its length, or NULL
 * when the status says success. */
CCSHIM_API const char* ccshim_legacy_status_message(const XlaCustomCallStatus* status, size_t* len);
/* Releases the message, leaving success. */
CCSHIM_API void ccshim_legacy_status_reset(XlaCustomCallStatus* status);

/* ---------------------------------------------------------------------------
 * The legacy target registry: (name, platform) -> kernel, with XLA's exact,
 * case-sensitive keys ("Host", "CUDA", "ROCM").
 * ------------------------------------------------------------------------ */

/* CCSHIM_EEXIST if the key is taken by another kernel; the same kernel
 * again is accepted. */
CCSHIM_API ccshim_status ccshim_legacy_register(const char* name, ccshim_legacy_fn fn,
                                                const char* platform);
/* What the registration macros call at load time: as above, but a conflict
 * is printed to stderr and counted instead of returned. */
CCSHIM_API void ccshim_legacy_register_at_load(const char* name, ccshim_legacy_fn fn,
                                               const char* platform);
/* The kernel registered under (name, platform), or NULL. */
CCSHIM_API ccshim_legacy_fn ccshim_legacy_lookup(const char* name, const char* platform);
/* Number of registered targets, and the index-th of them (borrowed
 * strings, valid until the registry changes). */
CCSHIM_API size_t ccshim_legacy_count(void);
CCSHIM_API ccshim_status ccshim_legacy_target(size_t index, const char** name,
                                              const char** platform, ccshim_legacy_fn* fn);
/* How many load-time registrations were refused as conflicts. */
CCSHIM_API size_t ccshim_legacy_conflicts(void);

/* ---------------------------------------------------------------------------
 * The legacy invoker.
 * ------------------------------------------------------------------------ */

typedef struct ccshim_legacy_call {
  ccshim_legacy_fn fn;
  int api_version; /* 1, 2 or 3 */
  ccshim_platform platform;
  /* Optional.  With it, the counts are checked and the tuple structure of
   * operands (NESTED layout) and result comes from it; without it the
   * result is a tuple exactly when num_rets != 1, as JAX emits calls. */
  const ccshim_signature* signature;
  ccshim_tuple_layout tuple_operands;
  void* const* args; /* operand leaf data, depth first */
  size_t num_args;
  void* const* rets; /* result leaf data, depth first */
  size_t num_rets;
  const char* opaque; /* the backend config bytes */
  size_t opaque_len;
  void* stream; /* GPU forms */
} ccshim_legacy_call;

typedef struct ccshim_legacy_outcome {
  int failed;
  int code;      /* 13 (INTERNAL) when failed, as both runtimes report */
  char* message; /* owned; worded as XLA reports it on that platform:
                    CPU "<msg>", GPU "CustomCall failed: <msg>" */
  size_t message_len;
} ccshim_legacy_outcome;

/* Calls call->fn as XLA's legacy runtime would: CPU in[] from the operand
 * leaves (or nested tables), out = the result buffer, or a table of result
 * leaves for a tuple result; GPU buffers[] = operand leaves then result
 * leaves; opaque NUL-terminated with its true length, never shown to CPU
 * v1/v2; one status per call, read back afterwards.  Returns CCSHIM_OK when
 * the kernel ran (whether or not it failed: see *outcome). */
CCSHIM_API ccshim_status ccshim_legacy_invoke(const ccshim_legacy_call* call,
                                              ccshim_legacy_outcome* outcome);
/* Frees the message; the outcome reads as success afterwards. */
CCSHIM_API void ccshim_legacy_outcome_reset(ccshim_legacy_outcome* outcome);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CCSHIM_LEGACY_H */
