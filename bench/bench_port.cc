// P of `ccshim bench`: the handlers `ccshim port` writes for the benchmark's
// trivial legacy kernels, as it writes them beside a project's kernels: the
// project's xla_legacy_call.h (python/ccshim/port/legacy_call.h) and, for a
// kernel that takes a status, its custom_call_status.h; each handler
// XLA_FFI_DEFINE_HANDLER with the binding the port gives: P, where every call
// site fixes the counts, an Arg<AnyBuffer> per operand and a Ret<AnyBuffer>
// per result (CpuFixedHandler / CpuStatusFixedHandler / GpuStatusFixedHandler)
// at 1 and 4 buffers; Pr, and P past 8 buffers, RemainingArgs and
// RemainingRets (CpuHandler / ...); on GPU the stream and the opaque as a u8
// array.  The port writes no handler for a CPU
// API version 3 kernel (it refuses them), so P has no cpu_v3 rows.  Compiled
// with B1x (bench_ffi.cc), where jaxlib's headers are given; exported as C
// symbols so that bench.c can take them.

#include <cstddef>
#include <cstdint>

// clang-format off: the status header before the handlers' header, as a
// ported kernel's source includes them.
#include "custom_call_status.h"
#include "legacy_call.h"
// clang-format on
#include "xla/ffi/api/ffi.h"

// bench.c's kernels, behind pointers the compiler cannot see through.  The
// status they take is the port's type here (bench_ffi.h declares them with
// ccshim's): the kernels never touch it, and a pointer is a pointer.
extern "C" {
extern void (*volatile ccshim_bench_k_v1)(void* out, const void** in);
extern void (*volatile ccshim_bench_k_v2)(void* out, const void** in, XlaCustomCallStatus* status);
extern void (*volatile ccshim_bench_k_gpu)(void* stream, void** buffers, const char* opaque,
                                           std::size_t len, XlaCustomCallStatus* status);
}

namespace {

// The kernels as a project's are: functions the handlers are bound to by name.
void KernelV1(void* out, const void** in) { ccshim_bench_k_v1(out, in); }
void KernelV2(void* out, const void** in, XlaCustomCallStatus* s) { ccshim_bench_k_v2(out, in, s); }
void KernelGpu(void* stream, void** buffers, const char* opaque, std::size_t len,
               XlaCustomCallStatus* s) {
  ccshim_bench_k_gpu(stream, buffers, opaque, len, s);
}

}  // namespace

// Where the counts are known only at run time: RemainingArgs and
// RemainingRets (Pr).
// clang-format off
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_port_cpu_v1,
                              xla_legacy_call::CpuHandler<KernelV1>,
                              xla::ffi::Ffi::Bind().RemainingArgs().RemainingRets());
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_port_cpu_v2,
                              xla_legacy_call::CpuStatusHandler<KernelV2>,
                              xla::ffi::Ffi::Bind().RemainingArgs().RemainingRets());
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_port_gpu,
                              xla_legacy_call::GpuStatusHandler<KernelGpu>,
                              xla::ffi::Ffi::Bind()
                                  .Ctx<xla::ffi::PlatformStream<void*>>()
                                  .RemainingArgs()
                                  .RemainingRets()
                                  .Attr<xla::ffi::Span<const std::uint8_t>>("opaque"));
// clang-format on

// Where every call site fixes the counts (P): an Arg<AnyBuffer> per
// operand, then a Ret<AnyBuffer> for the result, as the port writes them.
// clang-format off
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_port_cpu_v1_1,
                              xla_legacy_call::CpuFixedHandler<KernelV1>,
                              xla::ffi::Ffi::Bind()
                                  .Ret<xla::ffi::AnyBuffer>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_port_cpu_v2_1,
                              xla_legacy_call::CpuStatusFixedHandler<KernelV2>,
                              xla::ffi::Ffi::Bind()
                                  .Ret<xla::ffi::AnyBuffer>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_port_gpu_1,
                              xla_legacy_call::GpuStatusFixedHandler<KernelGpu>,
                              xla::ffi::Ffi::Bind()
                                  .Ctx<xla::ffi::PlatformStream<void*>>()
                                  .Ret<xla::ffi::AnyBuffer>()
                                  .Attr<xla::ffi::Span<const std::uint8_t>>("opaque"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_port_cpu_v1_4,
                              xla_legacy_call::CpuFixedHandler<KernelV1>,
                              xla::ffi::Ffi::Bind()
                                  .Arg<xla::ffi::AnyBuffer>()
                                  .Arg<xla::ffi::AnyBuffer>()
                                  .Arg<xla::ffi::AnyBuffer>()
                                  .Ret<xla::ffi::AnyBuffer>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_port_cpu_v2_4,
                              xla_legacy_call::CpuStatusFixedHandler<KernelV2>,
                              xla::ffi::Ffi::Bind()
                                  .Arg<xla::ffi::AnyBuffer>()
                                  .Arg<xla::ffi::AnyBuffer>()
                                  .Arg<xla::ffi::AnyBuffer>()
                                  .Ret<xla::ffi::AnyBuffer>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_port_gpu_4,
                              xla_legacy_call::GpuStatusFixedHandler<KernelGpu>,
                              xla::ffi::Ffi::Bind()
                                  .Ctx<xla::ffi::PlatformStream<void*>>()
                                  .Arg<xla::ffi::AnyBuffer>()
                                  .Arg<xla::ffi::AnyBuffer>()
                                  .Arg<xla::ffi::AnyBuffer>()
                                  .Ret<xla::ffi::AnyBuffer>()
                                  .Attr<xla::ffi::Span<const std::uint8_t>>("opaque"));
// clang-format on

extern "C" XLA_FFI_Error* (*ccshim_bench_port(int form, int buffers,
                                              int fixed))(XLA_FFI_CallFrame*) {
  // Past kFixedMaxBuffers buffers the port binds RemainingArgs and
  // RemainingRets even where the counts are fixed (python/ccshim/port/
  // _binding.py, FIXED_MAX_BUFFERS), so P is Pr there.
  constexpr int kFixedMaxBuffers = 8;
  static XLA_FFI_Error* (*const table[4][2])(XLA_FFI_CallFrame*) = {
      {ccshim_bench_port_cpu_v1_1, ccshim_bench_port_cpu_v1_4},
      {ccshim_bench_port_cpu_v2_1, ccshim_bench_port_cpu_v2_4},
      {nullptr, nullptr},  // cpu_v3: the port writes no handler for it
      {ccshim_bench_port_gpu_1, ccshim_bench_port_gpu_4}};
  if (form < 0 || form > 3) return nullptr;
  if (fixed && buffers <= kFixedMaxBuffers) {
    if (buffers != 1 && buffers != 4) return nullptr;
    return table[form][buffers == 1 ? 0 : 1];
  }
  switch (form) {
    case 0: return ccshim_bench_port_cpu_v1;
    case 1: return ccshim_bench_port_cpu_v2;
    case 3: return ccshim_bench_port_gpu;
    default: return nullptr;  // cpu_v3: the port writes no handler for it
  }
}
