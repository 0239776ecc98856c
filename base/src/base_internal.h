/*
 * Internal helpers shared by every ccshim module.  Not installed.
 */
#ifndef CCSHIM_BASE_INTERNAL_H
#define CCSHIM_BASE_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>

#include "ccshim/base.h"

#if defined(__GNUC__)
#define CCSHIM__LIKELY(x) __builtin_expect(!!(x), 1)
#define CCSHIM__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define CCSHIM__PRINTF(f, a) __attribute__((format(printf, f, a)))
#define CCSHIM__UNUSED __attribute__((unused))
#else
#define CCSHIM__LIKELY(x) (x)
#define CCSHIM__UNLIKELY(x) (x)
#define CCSHIM__PRINTF(f, a)
#define CCSHIM__UNUSED
#endif

/* 1 when this CPU and its OS run AVX2 code (CPUID, not the compiler
 * runtime's CPU model: cpu.c says why); 0 elsewhere, and off x86-64. */
int ccshim__cpu_has_avx2(void);

/* The XLA_FFI_DataType numbers base/ reads by name (base/ is below the ABI
 * header, so it does not include it; test_vocabulary pins them). */
enum {
  CCSHIM__DTYPE_INVALID = 0,
  CCSHIM__DTYPE_S8 = 2,
  CCSHIM__DTYPE_S64 = 5,
  CCSHIM__DTYPE_U8 = 6,
  CCSHIM__DTYPE_U64 = 9,
  CCSHIM__DTYPE_TOKEN = 17,
};

/* Records the thread's last-error message and returns `status`, so that a
 * failing path reads `return ccshim__fail(CCSHIM_EINVAL, "...", ...);`. */
ccshim_status ccshim__fail(ccshim_status status, const char* fmt, ...) CCSHIM__PRINTF(2, 3);
ccshim_status ccshim__vfail(ccshim_status status, const char* fmt, va_list ap);

/* A malloc'd copy of `len` bytes with a NUL after them, or NULL. */
char* ccshim__strndup(const char* s, size_t len);

/* snprintf into a fixed buffer that always ends in NUL and never overflows;
 * returns the number of bytes written (without the NUL). */
size_t ccshim__format(char* buf, size_t cap, const char* fmt, ...) CCSHIM__PRINTF(3, 4);

/* Writes "f32[2,3]"-style text for a buffer shape into buf. */
size_t ccshim__format_shape(char* buf, size_t cap, int dtype, int64_t rank, const int64_t* dims);

/* Copies a caller's versioned options struct (its first member is
 * size_t struct_size) into `dst`, a struct of `known` bytes that this
 * library knows, zero-filling what the caller's older struct lacks; NULL
 * `src` gives all defaults with dst's struct_size set.  Refuses, naming
 * `type` and its INIT macro `init`: a struct_size below `min` (0 is a struct
 * that was zeroed but never initialised), above CCSHIM_STRUCT_SIZE_MAX, or
 * above `known` with a nonzero byte past `known`. */
ccshim_status ccshim__read_options(void* dst, size_t known, const void* src, size_t min,
                                   const char* type, const char* init);

/* Forks a child that answers question(arg) in one byte through a pipe and
 * exits (stdout and stderr to /dev/null, no core file); returns its answer,
 * or `unknown` when it crashed, did not answer within timeout_ms (a lock
 * held across fork by another thread, say; it is killed) or could not be
 * started.  The asking process is never changed by the question. */
char ccshim__ask_child(char (*question)(void* arg), void* arg, int timeout_ms, char unknown);

#endif /* CCSHIM_BASE_INTERNAL_H */
