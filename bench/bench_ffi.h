/*
 * B1x of `ccshim bench` (bench/bench.c): the same trivial legacy kernels
 * ported by hand with XLA's C++ bindings (xla/ffi/api/ffi.h), in
 * bench/bench_ffi.cc, a C++17 translation unit compiled where jaxlib's
 * headers are given (CCSHIM_JAXLIB_INCLUDE).  This header is C and C++,
 * and names XLA's C API types by their tags only, so that bench.c (which
 * sees ccshim's declarations of them) and bench_ffi.cc (which sees XLA's)
 * both include it.
 */
#ifndef CCSHIM_BENCH_FFI_H
#define CCSHIM_BENCH_FFI_H

#include <stddef.h>

#include "xla/service/custom_call_status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct XLA_FFI_CallFrame;
struct XLA_FFI_Error;
typedef struct XLA_FFI_Error* ccshim_bench_ffi_handler(struct XLA_FFI_CallFrame* frame);

/* The kernels, each behind a pointer the compiler cannot see through
 * (bench.c): every caller makes a real call, as from XLA. */
extern void (*volatile ccshim_bench_k_v1)(void* out, const void** in);
extern void (*volatile ccshim_bench_k_v2)(void* out, const void** in, XlaCustomCallStatus* status);
extern void (*volatile ccshim_bench_k_v3)(void* out, const void** in, const char* opaque,
                                          size_t len, XlaCustomCallStatus* status);
extern void (*volatile ccshim_bench_k_gpu)(void* stream, void** buffers, const char* opaque,
                                           size_t len, XlaCustomCallStatus* status);

/* The ffi.h handler of form `form` (0 cpu_v1, 1 cpu_v2, 2 cpu_v3, 3 gpu) for
 * `buffers` buffers (1, 4, 16 or 64: one result, the rest arguments), or
 * NULL for another count. */
ccshim_bench_ffi_handler* ccshim_bench_ffi(int form, int buffers);

/* B1r: the ffi.h handler a maintainer writes for the kernel of form `form`
 * where its counts are known only at run time (RemainingArgs and
 * RemainingRets, each buffer by get<AnyBuffer>(i)): Pr's reference.  NULL
 * for cpu_v3, which the port does not port. */
ccshim_bench_ffi_handler* ccshim_bench_ffi_rt(int form);

/* The handler `ccshim port` writes for the kernel of form `form`
 * (bench/bench_port.cc): with `fixed`, P, bound for `buffers` buffers (1, 4,
 * 16 or 64), as it binds a target whose call sites all fix the counts;
 * else Pr, for any number (RemainingArgs, RemainingRets), as where the
 * counts are known only at run time.  NULL for cpu_v3, which the port does
 * not port.  Its GPU handlers take the opaque as a u8 array. */
ccshim_bench_ffi_handler* ccshim_bench_port(int form, int buffers, int fixed);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif
