// Typed XLA FFI handlers for CPU and GPU kernels written for XLA's legacy
// custom-call API.  Each handler calls its kernel unchanged, with what XLA's
// legacy runtime passed it.  CPU: `in` holds the operands' data in order;
// `out` is the result's buffer when the call has one (non-tuple) result, else
// a table of the results' buffers in order.  GPU: the stream, one table of the
// operands' then the results' device pointers, and the opaque bytes (the
// call's backend_config, now its `opaque` attribute).  Added by `ccshim port`;
// it needs nothing but XLA's FFI headers (jax.ffi.include_dir()), not even
// CUDA's or HIP's: the stream's type comes from the kernel.  A kernel that
// reports through XlaCustomCallStatus includes the status header added beside
// it (custom_call_status.h, at the path the kernel names), before this one.
#ifndef XLA_LEGACY_CALL_H_
#define XLA_LEGACY_CALL_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "xla/ffi/api/ffi.h"

namespace xla_legacy_call {

namespace ffi = xla::ffi;

// A legacy call's pointer tables live on the stack; no custom call of the
// ported project passes more buffers than this.
constexpr std::size_t kMaxBuffers = 256;

// The CPU legacy convention around `call(out, in)`, which runs the kernel.
template <typename Call>
ffi::Error CallCpu(ffi::RemainingArgs args, ffi::RemainingRets rets, Call call) {
  if (args.size() > kMaxBuffers || rets.size() > kMaxBuffers) {
    return ffi::Error::InvalidArgument("legacy custom call: expected at most " +
                                       std::to_string(kMaxBuffers) + " operands and results, got " +
                                       std::to_string(args.size()) + " and " +
                                       std::to_string(rets.size()));
  }
  const void* in[kMaxBuffers + 1];
  void* results[kMaxBuffers + 1];
  for (std::size_t i = 0; i < args.size(); ++i) {
    auto arg = args.get<ffi::AnyBuffer>(i);
    if (arg.has_error()) return arg.error();
    in[i] = arg->untyped_data();
  }
  for (std::size_t i = 0; i < rets.size(); ++i) {
    auto ret = rets.get<ffi::AnyBuffer>(i);
    if (ret.has_error()) return ret.error();
    results[i] = (*ret)->untyped_data();
  }
  void* out = rets.size() == 1 ? results[0] : static_cast<void*>(results);
  return call(out, in);
}

// A kernel `void f(void* out, const void** in)` (API version 1, or 2 with
// the status left unused).
template <void (*Kernel)(void*, const void**)>
ffi::Error CpuHandler(ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return CallCpu(args, rets, [](void* out, const void** in) {
    Kernel(out, in);
    return ffi::Error::Success();
  });
}

// The same, for a kernel that declares its operand table `void** in`.
template <void (*Kernel)(void*, void**)>
ffi::Error CpuHandler(ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return CallCpu(args, rets, [](void* out, const void** in) {
    Kernel(out, const_cast<void**>(in));
    return ffi::Error::Success();
  });
}

// The GPU legacy convention around `call(buffers, opaque, opaque_len)`, which
// runs the kernel: one table of the operands' then the results' device
// pointers (a token's entry is NULL, as XLA's legacy GPU runtime gave it),
// and the opaque bytes, copied so that they end in a NUL as XLA's string did.
template <typename Call>
ffi::Error CallGpu(ffi::RemainingArgs args, ffi::RemainingRets rets,
                   ffi::Span<const std::uint8_t> opaque, Call call) {
  if (args.size() + rets.size() > kMaxBuffers) {
    return ffi::Error::InvalidArgument("legacy custom call: expected at most " +
                                       std::to_string(kMaxBuffers) + " operands and results, got " +
                                       std::to_string(args.size() + rets.size()));
  }
  void* buffers[kMaxBuffers + 1];
  for (std::size_t i = 0; i < args.size(); ++i) {
    auto arg = args.get<ffi::AnyBuffer>(i);
    if (arg.has_error()) return arg.error();
    buffers[i] = arg->untyped_data();
  }
  for (std::size_t i = 0; i < rets.size(); ++i) {
    auto ret = rets.get<ffi::AnyBuffer>(i);
    if (ret.has_error()) return ret.error();
    buffers[args.size() + i] = (*ret)->untyped_data();
  }
  const std::string bytes(reinterpret_cast<const char*>(opaque.begin()), opaque.size());
  return call(buffers, bytes.c_str(), bytes.size());
}

// The stream type of a GPU kernel `void f(Stream, void**, const char*,
// std::size_t[, XlaCustomCallStatus*])`: cudaStream_t or hipStream_t.
template <typename Fn>
struct GpuKernel;
template <typename S, typename... Rest>
struct GpuKernel<void (*)(S, void**, const char*, std::size_t, Rest...)> {
  using Stream = S;
};
template <auto Kernel>
using StreamOf = typename GpuKernel<decltype(Kernel)>::Stream;

// A GPU kernel `void f(Stream stream, void** buffers, const char* opaque,
// std::size_t opaque_len)` (API version 1, or 2 with the status left unused);
// bound with Ctx<PlatformStream<Stream>>, RemainingArgs, RemainingRets and
// Attr<Span<const uint8_t>>("opaque").
template <auto Kernel>
ffi::Error GpuHandler(StreamOf<Kernel> stream, ffi::RemainingArgs args, ffi::RemainingRets rets,
                      ffi::Span<const std::uint8_t> opaque) {
  return CallGpu(args, rets, opaque, [stream](void** buffers, const char* data, std::size_t len) {
    Kernel(stream, buffers, data, len);
    return ffi::Error::Success();
  });
}

#ifdef XLA_LEGACY_CUSTOM_CALL_STATUS_H_
// A kernel `void f(void* out, const void** in, XlaCustomCallStatus* status)`
// (API version 2): a failure it reports is an INTERNAL error with its
// message, as XLA's legacy CPU runtime made it.
template <void (*Kernel)(void*, const void**, XlaCustomCallStatus*)>
ffi::Error CpuStatusHandler(ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return CallCpu(args, rets, [](void* out, const void** in) {
    XlaCustomCallStatus status;
    XlaCustomCallStatusSetSuccess(&status);
    Kernel(out, in, &status);
    if (status.failed) return ffi::Error::Internal(std::string(status.message, status.length));
    return ffi::Error::Success();
  });
}

// A GPU kernel that also takes an XlaCustomCallStatus* (API version 2 or 3):
// a failure it reports is an INTERNAL error "CustomCall failed: <message>",
// as XLA's legacy GPU runtime made it.
template <auto Kernel>
ffi::Error GpuStatusHandler(StreamOf<Kernel> stream, ffi::RemainingArgs args,
                            ffi::RemainingRets rets, ffi::Span<const std::uint8_t> opaque) {
  return CallGpu(args, rets, opaque, [stream](void** buffers, const char* data, std::size_t len) {
    XlaCustomCallStatus status;
    XlaCustomCallStatusSetSuccess(&status);
    Kernel(stream, buffers, data, len, &status);
    if (status.failed) {
      return ffi::Error::Internal("CustomCall failed: " +
                                  std::string(status.message, status.length));
    }
    return ffi::Error::Success();
  });
}
#endif

}  // namespace xla_legacy_call

#endif  // XLA_LEGACY_CALL_H_
