/*
 * ccshim/base.h -- what every part of ccshim shares: the export macro, the
 * status codes its own functions return, the message that explains the last
 * failure, the version, and facts about XLA element types.
 */
#ifndef CCSHIM_BASE_H
#define CCSHIM_BASE_H

#include <stddef.h>
#include <stdint.h>

#include "ccshim/version.h"

#if defined(_WIN32)
#define CCSHIM_API
#elif defined(CCSHIM_STATIC_DEFINE)
#define CCSHIM_API
#else
#define CCSHIM_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* What ccshim's own functions return (libffi's ffi_status, libuv's codes).
 * Every failure also leaves a sentence in ccshim_last_error() that says what
 * was expected and what came. */
typedef enum ccshim_status {
  CCSHIM_OK = 0,
  CCSHIM_EINVAL,       /* an argument is malformed */
  CCSHIM_ENOMEM,       /* out of memory */
  CCSHIM_ENOENT,       /* no such target, symbol or file */
  CCSHIM_EEXIST,       /* already registered differently */
  CCSHIM_EBUSY,        /* still in use (e.g. an adapter XLA may still call) */
  CCSHIM_EOVERFLOW,    /* a count, rank or size is out of range */
  CCSHIM_EVERSION,     /* an FFI API version out of the accepted range */
  CCSHIM_ESIGNATURE,   /* a signature does not parse */
  CCSHIM_EUNSUPPORTED, /* valid, but not something this build can do */
  CCSHIM_EHANDLER,     /* a handler or kernel reported an error */
} ccshim_status;

/* Returns the enum's name, e.g. "CCSHIM_EINVAL"; never NULL. */
CCSHIM_API const char* ccshim_status_name(ccshim_status status);

/* The message left by the last failing ccshim call on this thread, or "" when
 * none failed.  Borrowed: valid until the next ccshim call on this thread. */
CCSHIM_API const char* ccshim_last_error(void);

/* The library's version, "MAJOR.MINOR.PATCH", from the one place it is set
 * (CMake's project(VERSION)). */
CCSHIM_API const char* ccshim_version(void);

/* ---------------------------------------------------------------------------
 * Versioned option structs.  Each options struct ccshim takes begins with
 * `size_t struct_size`, the size of the struct the caller was compiled
 * against, as in XLA's C API; its INIT macro sets it.  So a struct can grow
 * at its end without breaking callers built before: the library reads only
 * the first struct_size bytes and takes the default (zero) for the rest, and
 * it refuses a larger struct whose bytes past what it knows are not zero (a
 * newer caller asking for something this library cannot do).
 * ------------------------------------------------------------------------ */

/* The bytes up to and including `last`: trailing padding is not counted,
 * so the value does not depend on what a later version appends. */
#define CCSHIM_STRUCT_SIZE(type, last) (offsetof(type, last) + sizeof(((type*)0)->last))

/* The largest struct_size any ccshim options struct will ever have: a
 * larger value is a struct that was never initialised. */
#define CCSHIM_STRUCT_SIZE_MAX 4096

/* What the INIT macros expand to: all fields zero but struct_size.  C++
 * (before C++20) has no designated initialisers, hence a function there. */
#ifdef __cplusplus
#define CCSHIM_OPTIONS_INIT(type, size) ccshim_options_init<type>(size)
#else
#define CCSHIM_OPTIONS_INIT(type, size) \
  { .struct_size = (size) }
#endif

/* ---------------------------------------------------------------------------
 * Element types, by XLA_FFI_DataType number (xla::PrimitiveType).
 * ------------------------------------------------------------------------ */

/* HLO's lower-case name ("f32", "bf16", "token", ...), or NULL when the
 * number names no FFI data type (0, 13, 14, 34 and above). */
CCSHIM_API const char* ccshim_dtype_name(int dtype);

/* The number for an HLO name of `len` bytes, or 0 (INVALID) when unknown. */
CCSHIM_API int ccshim_dtype_from_name(const char* name, size_t len);

/* Storage bits of one element: 1, 2, 4, 8, 16, 32, 64 or 128; 0 for TOKEN
 * and for numbers that name no type.  Sub-byte types (s1, s2, s4, u1, u2,
 * u4, f4e2m1fn) pack densely, as XLA stores them on the host. */
CCSHIM_API int ccshim_dtype_bits(int dtype);

/* Bytes needed by `count` elements of `dtype`, rounded up to whole bytes;
 * returns 0 and sets *overflow on size_t overflow. */
CCSHIM_API size_t ccshim_dtype_bytes(int dtype, uint64_t count, int* overflow);

/* --- The vocabulary of legacy custom calls, one for C, the command and the
 * Python package alike. ---------------------------------------------------- */

/* XLA's CustomCallApiVersion numbers. */
typedef enum ccshim_api_version {
  CCSHIM_API_ORIGINAL = 1,
  CCSHIM_API_STATUS_RETURNING = 2,
  CCSHIM_API_STATUS_RETURNING_UNIFIED = 3,
} ccshim_api_version;

typedef enum ccshim_platform {
  CCSHIM_PLATFORM_HOST = 0,
  CCSHIM_PLATFORM_CUDA = 1,
  CCSHIM_PLATFORM_ROCM = 2,
} ccshim_platform;

/* A platform has three spellings, each for one reader; "unknown" for a
 * value that is not a ccshim_platform:
 *   ccshim_platform_name:        "host", "cuda", "rocm" -- XLA's canonical
 *                                FFI key, and ccshim's own;
 *   ccshim_platform_xla_name:    "Host", "CUDA", "ROCM" -- the legacy
 *                                registry's key, and what jax.ffi's
 *                                register_ffi_target takes;
 *   ccshim_platform_export_name: "cpu", "cuda", "rocm" -- jax.export's. */
CCSHIM_API const char* ccshim_platform_name(ccshim_platform platform);
CCSHIM_API const char* ccshim_platform_xla_name(ccshim_platform platform);
CCSHIM_API const char* ccshim_platform_export_name(ccshim_platform platform);
/* Parses cpu/host and gpu/cuda/rocm in any case; CCSHIM_EINVAL otherwise,
 * with a message that lists them. */
CCSHIM_API ccshim_status ccshim_platform_parse(const char* name, ccshim_platform* out);
/* Writes into buf (always NUL-ended) the canonical form XLA's FFI registry
 * gives any platform name: lower case, cpu -> host, gpu -> cuda, oneapi ->
 * sycl; other names pass through lower-cased. */
CCSHIM_API void ccshim_canonical_platform(const char* platform, char* buf, size_t cap);
/* The five calling conventions of legacy kernels (on GPU, v2 and v3 are one
 * convention; XLA tells them apart only by the call site).  The order is
 * relied on: the CPU forms first, and the forms from CPU v3 on receive the
 * opaque bytes.  CCSHIM_FORM_NONE: no form known. */
typedef enum ccshim_legacy_form {
  CCSHIM_FORM_NONE = -1,
  CCSHIM_FORM_CPU_V1 = 0,
  CCSHIM_FORM_CPU_V2 = 1,
  CCSHIM_FORM_CPU_V3 = 2,
  CCSHIM_FORM_GPU_V1 = 3,
  CCSHIM_FORM_GPU_V23 = 4,
} ccshim_legacy_form;

/* The form of a kernel of API version 1, 2 or 3 on a platform;
 * CCSHIM_FORM_NONE for anything else. */
CCSHIM_API ccshim_legacy_form ccshim_legacy_form_of(int api_version, ccshim_platform platform);
/* "CPU v1", "CPU v2", "CPU v3", "GPU v1", "GPU v2/v3"; "" for NONE or any
 * other value. */
CCSHIM_API const char* ccshim_legacy_form_text(ccshim_legacy_form form);

/* A legacy form's name, as the tools and messages print it: "CPU v1",
 * "CPU v2", "CPU v3", "GPU v1", "GPU v2", "GPU v3"; NULL for an API version
 * that is not 1, 2 or 3, or an unknown platform.  (On GPU, v2 and v3 are one
 * calling convention; XLA tells them apart only by the call site.) */
CCSHIM_API const char* ccshim_legacy_form_name(int api_version, ccshim_platform platform);

#ifdef __cplusplus
} /* extern "C" */

template <typename T>
inline T ccshim_options_init(size_t size) {
  T options = T();
  options.struct_size = size;
  return options;
}
#endif

#endif /* CCSHIM_BASE_H */
