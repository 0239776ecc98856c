/*
 * ccshim/runtime.h -- the embedded typed runtime: what lets a typed-FFI
 * handler run with no XLA.
 *
 * It has the four parts XLA has:
 *   - an XLA_FFI_Api table in the 0.4 layout (ccshim_ffi_api), every entry
 *     present and checking struct sizes as XLA does;
 *   - invoke contexts (XLA_FFI_InvokeContext): platform, stream, device
 *     ordinal, run id, per-stage State, user data, thread pool, allocator and
 *     the public extension list;
 *   - a call-frame builder: buffers and attributes of every kind XLA
 *     delivers, names sorted byte-wise as XLA sorts them;
 *   - a handler registry keyed by (name, canonical platform) that makes XLA's
 *     metadata query at registration, and invoke by name or by handler.
 */
#ifndef CCSHIM_RUNTIME_H
#define CCSHIM_RUNTIME_H

#include "ccshim/base.h"
#include "ccshim/xla_ffi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The process-wide API table of the embedded runtime (XLA_FFI_GetApi's role;
 * ccshim does not export that name, which belongs to XLA).  Its api_version
 * is 0.4.  Borrowed; lives for the whole process. */
CCSHIM_API const XLA_FFI_Api* ccshim_ffi_api(void);

/* ---------------------------------------------------------------------------
 * Errors made by the embedded runtime.  These accessors work on errors that
 * ccshim_ffi_api() made (which is every error a handler can create through
 * call_frame->api while running in this runtime).
 * ------------------------------------------------------------------------ */

CCSHIM_API XLA_FFI_Error_Code ccshim_error_code(const XLA_FFI_Error* error);
/* Borrowed; lives as long as the error. */
CCSHIM_API const char* ccshim_error_message(const XLA_FFI_Error* error);
/* Destroys an error owned by the caller; NULL is ignored. */
CCSHIM_API void ccshim_error_free(XLA_FFI_Error* error);
/* "INVALID_ARGUMENT", "INTERNAL", ...; "UNKNOWN_CODE" outside 0..16. */
CCSHIM_API const char* ccshim_error_code_name(XLA_FFI_Error_Code code);

/* ---------------------------------------------------------------------------
 * Invoke contexts.  ccshim_context is the embedded runtime's
 * XLA_FFI_InvokeContext, so a ccshim_context* is what a call frame's ctx
 * holds.  One context stands for one call site: State set at instantiate is
 * read back at execute through the same context.
 * ------------------------------------------------------------------------ */

typedef XLA_FFI_InvokeContext ccshim_context;

/* Host memory allocator hooks for DeviceMemory_* on GPU platforms (on the
 * host platform the runtime uses aligned host memory itself). */
typedef void* (*ccshim_alloc_fn)(void* user, size_t size, size_t alignment);
typedef void (*ccshim_free_fn)(void* user, void* data, size_t size);

/* Initialise with CCSHIM_CONTEXT_OPTIONS_INIT, then set what you need;
 * every other field's zero is its default. */
typedef struct ccshim_context_options {
  /* CCSHIM_CONTEXT_OPTIONS_STRUCT_SIZE, as the INIT macro sets it (see
   * "Versioned option structs" in base.h). */
  size_t struct_size;
  /* "host"/"cpu" (the default when NULL), "cuda"/"gpu", "rocm", any case. */
  const char* platform;
  /* GPU platforms: the stream Stream_Get returns.  NULL makes the runtime
   * hand out a distinct stream value of its own (not a real stream), which
   * lets GPU-form kernels run on host memory in tests. */
  void* stream;
  int32_t device_ordinal;
  int64_t run_id;
  /* Host platform: worker threads behind ThreadPool_Schedule; 0 means no
   * pool, and ThreadPool_* then fail as XLA does without one. */
  int num_threads;
  /* GPU platforms: device memory for DeviceMemory_*; NULL leaves it
   * UNIMPLEMENTED, as in XLA without an allocator. */
  ccshim_alloc_fn alloc;
  ccshim_free_fn free;
  void* alloc_user;
} ccshim_context_options;

#define CCSHIM_CONTEXT_OPTIONS_STRUCT_SIZE CCSHIM_STRUCT_SIZE(ccshim_context_options, alloc_user)
#define CCSHIM_CONTEXT_OPTIONS_INIT \
  CCSHIM_OPTIONS_INIT(ccshim_context_options, CCSHIM_CONTEXT_OPTIONS_STRUCT_SIZE)

/* pre: out != NULL; opts may be NULL for defaults.  The context owns its
 * thread pool and the State objects handlers give it. */
CCSHIM_API ccshim_status ccshim_context_new(const ccshim_context_options* opts,
                                            ccshim_context** out);
/* Joins the pool, calls every State deleter, frees; NULL is ignored. */
CCSHIM_API void ccshim_context_free(ccshim_context* ctx);
/* The canonical platform name ("host", "cuda", "rocm", ...). */
CCSHIM_API const char* ccshim_context_platform(const ccshim_context* ctx);
/* What Stream_Get returns for this context (NULL on the host platform). */
CCSHIM_API void* ccshim_context_stream(const ccshim_context* ctx);
/* Makes `data` (borrowed; must outlive every use) the user data that
 * InvokeContext_Get returns for `type_id`.  Replaces an earlier value. */
CCSHIM_API ccshim_status ccshim_context_set_user_data(ccshim_context* ctx, XLA_FFI_TypeId type_id,
                                                      void* data);
/* Sets the head of the public extension list that
 * InvokeContext_FindExtension searches (borrowed; must outlive the context's
 * use). */
CCSHIM_API void ccshim_context_set_extensions(ccshim_context* ctx, const XLA_FFI_Extension* first);

/* ---------------------------------------------------------------------------
 * Call-frame builder.  Add buffers and attributes in any order, then build:
 * the frame points into the builder and stays valid until the builder is
 * changed, reset or freed.  Buffer data is borrowed; dims, names and
 * attribute values are copied.
 * ------------------------------------------------------------------------ */

typedef struct ccshim_frame_builder ccshim_frame_builder;

/* ccshim's own ceilings for what XLA would never send. */
#define CCSHIM_FRAME_MAX_BUFFERS 65536
#define CCSHIM_FRAME_MAX_ATTRS 65536
#define CCSHIM_FRAME_MAX_DICT_DEPTH 32
#define CCSHIM_FRAME_MAX_ATTR_BYTES (1u << 30) /* one string or array value */

CCSHIM_API ccshim_status ccshim_frame_builder_new(ccshim_frame_builder** out);
CCSHIM_API void ccshim_frame_builder_free(ccshim_frame_builder* fb);
/* Forgets everything added; keeps the memory for reuse. */
CCSHIM_API void ccshim_frame_builder_reset(ccshim_frame_builder* fb);

/* Adds an argument (operand leaf) or result buffer.  Refused: an unknown
 * dtype, rank outside 0..CCSHIM_MAX_RANK, dims NULL with rank > 0, a
 * negative dim, a byte size that overflows, a TOKEN with data or dims.
 * `data` may be NULL (GPU instantiate sees NULL data). */
CCSHIM_API ccshim_status ccshim_frame_builder_add_arg(ccshim_frame_builder* fb,
                                                      XLA_FFI_DataType dtype, void* data,
                                                      int64_t rank, const int64_t* dims);
CCSHIM_API ccshim_status ccshim_frame_builder_add_ret(ccshim_frame_builder* fb,
                                                      XLA_FFI_DataType dtype, void* data,
                                                      int64_t rank, const int64_t* dims);

/* Attributes, into the innermost open dictionary (the top level when none is
 * open).  Names are NUL-terminated and unique within their dictionary.
 * STRING keeps every byte, NULs included, and carries its true length.
 * SCALAR dtypes: PRED (one byte), S8..S64, U8..U64, F32, F64.  ARRAY element
 * types: S8..S64, U8..U64, F32, F64.  These are the kinds XLA delivers. */
CCSHIM_API ccshim_status ccshim_frame_builder_add_string(ccshim_frame_builder* fb, const char* name,
                                                         const char* bytes, size_t len);
CCSHIM_API ccshim_status ccshim_frame_builder_add_scalar(ccshim_frame_builder* fb, const char* name,
                                                         XLA_FFI_DataType dtype, const void* value);
CCSHIM_API ccshim_status ccshim_frame_builder_add_array(ccshim_frame_builder* fb, const char* name,
                                                        XLA_FFI_DataType dtype, const void* data,
                                                        size_t count);
CCSHIM_API ccshim_status ccshim_frame_builder_begin_dict(ccshim_frame_builder* fb,
                                                         const char* name);
CCSHIM_API ccshim_status ccshim_frame_builder_end_dict(ccshim_frame_builder* fb);

/* Fills *out as XLA does: struct_size 168, no extension, the given api, ctx
 * and stage, future NULL, attributes sorted byte-wise at every level.
 * Refused while a dictionary is still open. */
CCSHIM_API ccshim_status ccshim_frame_builder_build(ccshim_frame_builder* fb,
                                                    const XLA_FFI_Api* api, ccshim_context* ctx,
                                                    XLA_FFI_ExecutionStage stage,
                                                    XLA_FFI_CallFrame* out);

/* ---------------------------------------------------------------------------
 * Handler registry.  XLA's rules: the platform is canonicalised (case is
 * ignored, cpu -> host, gpu -> cuda, oneapi -> sycl); the execute handler is
 * sent the metadata query at registration (extension type 1, ctx NULL, no
 * buffers) and its version must lie in 0.1 .. 0.4; traits given here are
 * OR-ed with those the handler reports; registering the same again is
 * accepted, a different bundle or metadata under the same key is refused.
 * XLA has no unregister; ccshim_unregister is this runtime's own addition.
 * ------------------------------------------------------------------------ */

typedef struct ccshim_registration {
  XLA_FFI_Handler_Bundle bundle;
  int api_major, api_minor;      /* reported in the metadata query */
  XLA_FFI_Handler_Traits traits; /* reported | given at registration */
  int64_t state_type_id;         /* from the instantiate handler, if any */
} ccshim_registration;

/* pre: name, platform and bundle->execute non-NULL.  A failure leaves the
 * registry as it was; a handler's own error (e.g. from its metadata query)
 * comes back as CCSHIM_EHANDLER with its message. */
CCSHIM_API ccshim_status ccshim_register(const char* name, const char* platform,
                                         const XLA_FFI_Handler_Bundle* bundle,
                                         XLA_FFI_Handler_Traits traits);
/* Shorthand for a bundle with only `execute`. */
CCSHIM_API ccshim_status ccshim_register_handler(const char* name, const char* platform,
                                                 XLA_FFI_Handler* execute,
                                                 XLA_FFI_Handler_Traits traits);
CCSHIM_API ccshim_status ccshim_lookup(const char* name, const char* platform,
                                       ccshim_registration* out);
CCSHIM_API ccshim_status ccshim_unregister(const char* name, const char* platform);
/* 1 if `handler` is any stage of any registered bundle, else 0. */
CCSHIM_API int ccshim_is_registered_handler(XLA_FFI_Handler* handler);
/* ccshim_canonical_platform (XLA's rule for a registry's platform key) is
 * declared in ccshim/base.h, with the rest of the platform vocabulary. */

/* ---------------------------------------------------------------------------
 * Invoke.  Builds the frame from `fb` (which may be NULL for an empty frame),
 * calls the handler for `stage`, and waits for its future if it set one.
 * Returns CCSHIM_OK when the handler succeeded; CCSHIM_EHANDLER when it
 * returned an error, which is then stored in *error (owned by the caller;
 * ccshim_error_free) when error is non-NULL, and described in
 * ccshim_last_error() as "CODE: message".
 * ------------------------------------------------------------------------ */

/* By (name, platform).  A stage the bundle has no handler for does nothing
 * and succeeds, as in XLA.  ctx must be a context of that platform. */
CCSHIM_API ccshim_status ccshim_invoke(const char* name, const char* platform, ccshim_context* ctx,
                                       XLA_FFI_ExecutionStage stage, ccshim_frame_builder* fb,
                                       XLA_FFI_Error** error);

/* By handler pointer, at any stage. */
CCSHIM_API ccshim_status ccshim_invoke_handler(XLA_FFI_Handler* handler, ccshim_context* ctx,
                                               XLA_FFI_ExecutionStage stage,
                                               ccshim_frame_builder* fb, XLA_FFI_Error** error);

/* Calls `handler` on a ready frame (its api, ctx and stage as given) and
 * waits for its future, as ccshim_invoke_handler does after building. */
CCSHIM_API ccshim_status ccshim_call_frame(XLA_FFI_Handler* handler, XLA_FFI_CallFrame* frame,
                                           XLA_FFI_Error** error);

/* Sends `handler` XLA's metadata query through ccshim_ffi_api() and reports
 * what it answered; a handler error comes back as CCSHIM_EHANDLER. */
CCSHIM_API ccshim_status ccshim_query_metadata(XLA_FFI_Handler* handler, XLA_FFI_Metadata* out);

/* Whether `fn`, a function of unknown ABI (a bare PyCapsule's, say),
 * answers as a typed-FFI handler.  It is called in a forked child, which
 * cannot change this process, with the metadata query XLA sends every
 * handler at registration, through a copy of ccshim_ffi_api() whose
 * Error_Create is watched.  *typed is 1 when it answered the query (a
 * handler made with XLA's C++ binding from FFI 0.1 on) or reported an error
 * through the API table (what handlers that do not know the query do with
 * an empty frame); 0 when it returned having done neither, crashed, or did
 * not return within 2 s: a legacy kernel, or a typed handler that ignores
 * its frame, which cannot be told apart. */
CCSHIM_API ccshim_status ccshim_probe_typed_handler(XLA_FFI_Handler* fn, int* typed);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CCSHIM_RUNTIME_H */
