// Typed XLA FFI handlers for CPU and GPU kernels written for XLA's legacy
// custom-call API.  Each handler calls its kernel unchanged, with what XLA's
// legacy runtime passed it.  CPU: `in` holds the operands' data in order; `out`
// is the result's buffer when the call has one (non-tuple) result, else a
// table of the results' buffers in order.  GPU: the stream, one table of the
// operands' then the results' device pointers, and the opaque bytes (the
// call's backend_config, now its `opaque` attribute).  The handlers take the
// buffers bound with RemainingArgs and RemainingRets (CpuHandler, GpuHandler,
// ...), or, where every call site fixes the counts, one Arg<AnyBuffer> per
// operand and one Ret<AnyBuffer> per result (CpuFixedHandler, ...).  Added by
// `ccshim port`; it needs nothing but XLA's FFI headers
// (jax.ffi.include_dir()), not even CUDA's or HIP's: the stream's type comes
// from the kernel.  A kernel that reports through XlaCustomCallStatus includes
// the status header added beside it (custom_call_status.h, at the path the
// kernel names), before this one.
#ifndef XLA_LEGACY_CALL_H_
#define XLA_LEGACY_CALL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "xla/ffi/api/ffi.h"

namespace xla_legacy_call {

namespace ffi = xla::ffi;

// A legacy call's pointer tables live on the stack; no custom call of the
// ported project passes more buffers than this.
constexpr std::size_t kMaxBuffers = 256;

// What is said of a call past kMaxBuffers: out of line, so that the path
// every call takes stays small enough for the compiler to inline the
// buffers' decoding into it (as a hand-written binding's is).
#if defined(__GNUC__) || defined(__clang__)
#define XLA_LEGACY_CALL_COLD __attribute__((cold, noinline))
#define XLA_LEGACY_CALL_INLINE __attribute__((always_inline)) inline
#elif defined(_MSC_VER)
#define XLA_LEGACY_CALL_COLD __declspec(noinline)
#define XLA_LEGACY_CALL_INLINE __forceinline
#else
#define XLA_LEGACY_CALL_COLD
#define XLA_LEGACY_CALL_INLINE inline
#endif
XLA_LEGACY_CALL_COLD inline ffi::Error TooMany(std::size_t got) {
  return ffi::Error::InvalidArgument("legacy custom call: expected at most " +
                                     std::to_string(kMaxBuffers) + " buffers, got " +
                                     std::to_string(got));
}
XLA_LEGACY_CALL_COLD inline ffi::Error NotABuffer(const char* what, std::size_t i) {
  return ffi::Error::InvalidArgument(std::string("legacy custom call: ") + what + " " +
                                     std::to_string(i) + " is not a buffer");
}

// Each buffer's data: read from the tables of XLA's C API behind
// RemainingArgs and RemainingRets (XLA_FFI_Args, XLA_FFI_Rets, through their
// protected accessors) where the headers are of an FFI version this was
// checked against (0.3 to 0.5: JAX 0.10 to 0.12), which costs what a
// hand-written binding's Arg<AnyBuffer> does; through get<AnyBuffer>()
// otherwise, which decodes each into an ErrorOr (more than twice the
// instructions: `ccshim bench`, P; XLA_LEGACY_CALL_DECODE_EACH defined
// takes that way anywhere).  Each returns the index of the first entry that
// is not a buffer, or n.
#if !defined(XLA_LEGACY_CALL_DECODE_EACH) && XLA_FFI_API_MAJOR == 0 && XLA_FFI_API_MINOR >= 3 && \
    XLA_FFI_API_MINOR <= 5
XLA_LEGACY_CALL_INLINE std::size_t ArgData(const ffi::RemainingArgs& args, std::size_t n,
                                           const void** dst) {
  struct Table : ffi::RemainingArgs {
    explicit Table(const ffi::RemainingArgs& a) : ffi::RemainingArgs(a) {}
    const XLA_FFI_Args* c() const { return this->args(); }
    std::size_t first() const { return this->offset(); }
  } const table(args);
  const XLA_FFI_Args* c = table.c();
  for (std::size_t i = 0, k = table.first(); i < n; ++i, ++k) {
    if (c->types[k] != XLA_FFI_ArgType_BUFFER) return i;
    dst[i] = static_cast<const XLA_FFI_Buffer*>(c->args[k])->data;
  }
  return n;
}
XLA_LEGACY_CALL_INLINE std::size_t RetData(const ffi::RemainingRets& rets, std::size_t n,
                                           void** dst) {
  struct Table : ffi::RemainingRets {
    explicit Table(const ffi::RemainingRets& r) : ffi::RemainingRets(r) {}
    const XLA_FFI_Rets* c() const { return this->rets(); }
    std::size_t first() const { return this->offset(); }
  } const table(rets);
  const XLA_FFI_Rets* c = table.c();
  for (std::size_t i = 0, k = table.first(); i < n; ++i, ++k) {
    if (c->types[k] != XLA_FFI_RetType_BUFFER) return i;
    dst[i] = static_cast<const XLA_FFI_Buffer*>(c->rets[k])->data;
  }
  return n;
}
#else
XLA_LEGACY_CALL_INLINE std::size_t ArgData(const ffi::RemainingArgs& args, std::size_t n,
                                           const void** dst) {
  for (std::size_t i = 0; i < n; ++i) {
    auto arg = args.get<ffi::AnyBuffer>(i);
    if (arg.has_error()) return i;
    dst[i] = arg->untyped_data();
  }
  return n;
}
XLA_LEGACY_CALL_INLINE std::size_t RetData(const ffi::RemainingRets& rets, std::size_t n,
                                           void** dst) {
  for (std::size_t i = 0; i < n; ++i) {
    auto ret = rets.get<ffi::AnyBuffer>(i);
    if (ret.has_error()) return i;
    dst[i] = (*ret)->untyped_data();
  }
  return n;
}
#endif

// The CPU legacy convention around `call(out, in)`, which runs the kernel.
template <typename Call>
XLA_LEGACY_CALL_INLINE ffi::Error CallCpu(ffi::RemainingArgs args, ffi::RemainingRets rets,
                                          Call call) {
  const std::size_t num_args = args.size(), num_rets = rets.size();
  if (num_args > kMaxBuffers || num_rets > kMaxBuffers) return TooMany(num_args + num_rets);
  const void* in[kMaxBuffers + 1];
  void* results[kMaxBuffers + 1];
  std::size_t bad = ArgData(args, num_args, in);
  if (bad != num_args) return NotABuffer("operand", bad);
  bad = RetData(rets, num_rets, results);
  if (bad != num_rets) return NotABuffer("result", bad);
  void* out = num_rets == 1 ? results[0] : static_cast<void*>(results);
  return call(out, in);
}

// Runs a kernel `void f(void* out, const void** in)` (API version 1, or 2
// with the status left unused), or one that declares its operand table
// `void** in`.
template <auto Kernel>
struct RunCpu {
  ffi::Error operator()(void* out, const void** in) const {
    if constexpr (std::is_invocable_v<decltype(Kernel), void*, const void**>) {
      Kernel(out, in);
    } else {
      Kernel(out, const_cast<void**>(in));
    }
    return ffi::Error::Success();
  }
};

// A kernel `void f(void* out, const void** in)`, bound with RemainingArgs
// and RemainingRets.
template <void (*Kernel)(void*, const void**)>
ffi::Error CpuHandler(ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return CallCpu(args, rets, RunCpu<Kernel>{});
}

// The same, for a kernel that declares its operand table `void** in`.
template <void (*Kernel)(void*, void**)>
ffi::Error CpuHandler(ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return CallCpu(args, rets, RunCpu<Kernel>{});
}

// The GPU legacy convention around `call(buffers, opaque, opaque_len)`, which
// runs the kernel: one table of the operands' then the results' device
// pointers (a token's entry is NULL, as XLA's legacy GPU runtime gave it),
// and the opaque bytes, copied so that they end in a NUL as XLA's string did.
template <typename Call>
XLA_LEGACY_CALL_INLINE ffi::Error CallGpu(ffi::RemainingArgs args, ffi::RemainingRets rets,
                                          ffi::Span<const std::uint8_t> opaque, Call call) {
  const std::size_t num_args = args.size(), num_rets = rets.size();
  if (num_args + num_rets > kMaxBuffers) return TooMany(num_args + num_rets);
  void* buffers[kMaxBuffers + 1];
  std::size_t bad = ArgData(args, num_args, const_cast<const void**>(buffers));
  if (bad != num_args) return NotABuffer("operand", bad);
  bad = RetData(rets, num_rets, buffers + num_args);
  if (bad != num_rets) return NotABuffer("result", bad);
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

// Runs a GPU kernel `void f(Stream stream, void** buffers, const char*
// opaque, std::size_t opaque_len)` (API version 1, or 2 with the status left
// unused) on the call's stream.
template <auto Kernel>
struct RunGpu {
  StreamOf<Kernel> stream;
  ffi::Error operator()(void** buffers, const char* data, std::size_t len) const {
    Kernel(stream, buffers, data, len);
    return ffi::Error::Success();
  }
};

// A GPU kernel, bound with Ctx<PlatformStream<Stream>>, RemainingArgs,
// RemainingRets and Attr<Span<const uint8_t>>("opaque").
template <auto Kernel>
ffi::Error GpuHandler(StreamOf<Kernel> stream, ffi::RemainingArgs args, ffi::RemainingRets rets,
                      ffi::Span<const std::uint8_t> opaque) {
  return CallGpu(args, rets, opaque, RunGpu<Kernel>{stream});
}

// Where every call site of a target passes the same number of operands and
// results, its binding says how many, as a hand port's does: an
// Arg<AnyBuffer> for each operand, then a Ret<AnyBuffer> for each result
// (ffi.h checks the counts and each buffer's type).  The handlers below take
// those buffers one by one and make the same tables as the ones above.
template <typename T>
constexpr bool kIsArg = std::is_same_v<T, ffi::AnyBuffer>;
template <typename T>
constexpr bool kIsRet = std::is_same_v<T, ffi::Result<ffi::AnyBuffer>>;
template <typename... Bound>
constexpr std::size_t kNumArgs = (std::size_t{kIsArg<Bound>} + ... + std::size_t{0});
template <typename... Bound>
constexpr std::size_t kNumRets = (std::size_t{kIsRet<Bound>} + ... + std::size_t{0});
template <typename... Bound>
constexpr bool OperandsFirst() {
  const bool is_arg[] = {kIsArg<Bound>..., false}, is_ret[] = {kIsRet<Bound>..., false};
  bool results = false;
  for (std::size_t i = 0; i < sizeof...(Bound); ++i) {
    if (is_arg[i] && results) return false;
    results = results || is_ret[i];
  }
  return true;
}

// The legacy CPU tables of operands and results bound one by one.
template <typename Call, typename... Bound>
XLA_LEGACY_CALL_INLINE ffi::Error CallCpuBound(Call call, Bound... bound) {
  constexpr std::size_t num_args = kNumArgs<Bound...>, num_rets = kNumRets<Bound...>;
  static_assert(num_args + num_rets == sizeof...(Bound) && OperandsFirst<Bound...>(),
                "bind each operand as Arg<AnyBuffer>, then each result as Ret<AnyBuffer>");
  const void* in[num_args + 1] = {};
  void* results[num_rets + 1] = {};
  std::size_t a = 0, r = 0;
  auto put = [&](auto buffer) {
    if constexpr (kIsArg<decltype(buffer)>) {
      in[a++] = buffer.untyped_data();
    } else {
      results[r++] = buffer->untyped_data();
    }
  };
  (put(bound), ...);
  void* out = num_rets == 1 ? results[0] : static_cast<void*>(results);
  return call(out, in);
}

// The legacy GPU table bound one by one, operands then results, and the
// opaque attribute after them.
template <typename Call, typename... Bound>
XLA_LEGACY_CALL_INLINE ffi::Error CallGpuBound(Call call, Bound... bound) {
  constexpr std::size_t num_buffers = kNumArgs<Bound...> + kNumRets<Bound...>;
  static_assert(num_buffers + 1 == sizeof...(Bound) && OperandsFirst<Bound...>(),
                "bind each operand as Arg<AnyBuffer>, each result as Ret<AnyBuffer>, then "
                "Attr<Span<const uint8_t>>(\"opaque\")");
  void* buffers[num_buffers + 1] = {};
  ffi::Span<const std::uint8_t> opaque;
  std::size_t i = 0;
  auto put = [&](auto entry) {
    using T = decltype(entry);
    if constexpr (kIsArg<T>) {
      buffers[i++] = entry.untyped_data();
    } else if constexpr (kIsRet<T>) {
      buffers[i++] = entry->untyped_data();
    } else {
      opaque = entry;
    }
  };
  (put(bound), ...);
  const std::string bytes(reinterpret_cast<const char*>(opaque.begin()), opaque.size());
  return call(buffers, bytes.c_str(), bytes.size());
}

template <typename Run>
struct CpuBound {
  template <typename... Bound>
  ffi::Error operator()(Bound... bound) const {
    return CallCpuBound(Run{}, bound...);
  }
};

template <typename Run, typename Stream>
struct GpuBound {
  template <typename... Bound>
  ffi::Error operator()(Stream stream, Bound... bound) const {
    return CallGpuBound(Run{stream}, bound...);
  }
};

// CpuHandler and GpuHandler for a binding of fixed counts.
template <auto Kernel>
inline constexpr CpuBound<RunCpu<Kernel>> CpuFixedHandler{};
template <auto Kernel>
inline constexpr GpuBound<RunGpu<Kernel>, StreamOf<Kernel>> GpuFixedHandler{};

#ifdef XLA_LEGACY_CUSTOM_CALL_STATUS_H_
// Runs a kernel `void f(void* out, const void** in, XlaCustomCallStatus*
// status)` (API version 2): a failure it reports is an INTERNAL error with
// its message, as XLA's legacy CPU runtime made it.
template <auto Kernel>
struct RunCpuStatus {
  ffi::Error operator()(void* out, const void** in) const {
    XlaCustomCallStatus status;
    XlaCustomCallStatusSetSuccess(&status);
    Kernel(out, in, &status);
    if (status.failed) return ffi::Error::Internal(std::string(status.message, status.length));
    return ffi::Error::Success();
  }
};

template <void (*Kernel)(void*, const void**, XlaCustomCallStatus*)>
ffi::Error CpuStatusHandler(ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return CallCpu(args, rets, RunCpuStatus<Kernel>{});
}

// Runs a GPU kernel that also takes an XlaCustomCallStatus* (API version 2
// or 3): a failure it reports is an INTERNAL error "CustomCall failed:
// <message>", as XLA's legacy GPU runtime made it.
template <auto Kernel>
struct RunGpuStatus {
  StreamOf<Kernel> stream;
  ffi::Error operator()(void** buffers, const char* data, std::size_t len) const {
    XlaCustomCallStatus status;
    XlaCustomCallStatusSetSuccess(&status);
    Kernel(stream, buffers, data, len, &status);
    if (status.failed) {
      return ffi::Error::Internal("CustomCall failed: " +
                                  std::string(status.message, status.length));
    }
    return ffi::Error::Success();
  }
};

template <auto Kernel>
ffi::Error GpuStatusHandler(StreamOf<Kernel> stream, ffi::RemainingArgs args,
                            ffi::RemainingRets rets, ffi::Span<const std::uint8_t> opaque) {
  return CallGpu(args, rets, opaque, RunGpuStatus<Kernel>{stream});
}

// CpuStatusHandler and GpuStatusHandler for a binding of fixed counts.
template <auto Kernel>
inline constexpr CpuBound<RunCpuStatus<Kernel>> CpuStatusFixedHandler{};
template <auto Kernel>
inline constexpr GpuBound<RunGpuStatus<Kernel>, StreamOf<Kernel>> GpuStatusFixedHandler{};
#endif

}  // namespace xla_legacy_call

#endif  // XLA_LEGACY_CALL_H_
