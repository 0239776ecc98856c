// B1x of `ccshim bench`: the maintainer's port of the benchmark's trivial
// legacy kernels, written with XLA's C++ bindings (xla/ffi/api/ffi.h) as the
// hand ports of real projects bind theirs (examples/migration/ported/):
//   - one binding per kernel and buffer count: at 1 and 4 buffers each
//     buffer an Arg<AnyBuffer> and the result a Ret<AnyBuffer>; at 16 and 64
//     the arguments as RemainingArgs, their count checked by the handler;
//   - v3 and GPU: the opaque as the attribute Attr<std::string_view>("opaque"),
//     copied with a NUL after its last byte (kernels may read it as a C
//     string; XLA's string attributes have no terminator), as B1 does;
//   - GPU: the stream from Ctx<PlatformStream<void*>>();
//   - v2, v3 and GPU: the kernel's failed status made an INTERNAL error.
// The handlers are C symbols (XLA_FFI_DEFINE_HANDLER_SYMBOL), as a library
// exports them for jax.ffi.register_ffi_target.  ffi.h makes its own checks
// of the frame (struct size, metadata query, stage, counts, each buffer's
// and the attribute's type tag); the same calls as B1's otherwise.

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

#include "bench_ffi.h"
#include "ccshim/legacy.h"  // the legacy status the kernels fill
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;
using ffi::AnyBuffer;

namespace {

constexpr size_t kOpaqueCap = 256;  // as B1's

// The kernel's status made the handler's error.
ffi::Error FromStatus(XlaCustomCallStatus* status) {
  size_t len;
  const char* msg = ccshim_legacy_status_message(status, &len);
  if (msg == nullptr) return ffi::Error::Success();
  ffi::Error e = ffi::Error::Internal(std::string(msg, len));
  ccshim_legacy_status_reset(status);
  return e;
}

// The opaque into buf with a NUL after it; false when it does not fit.
bool CopyOpaque(std::string_view opaque, char* buf) {
  if (opaque.size() >= kOpaqueCap) return false;
  std::memcpy(buf, opaque.data(), opaque.size());
  buf[opaque.size()] = '\0';
  return true;
}

ffi::Error OpaqueTooLong() { return ffi::Error::InvalidArgument("opaque: too long"); }

// The data pointers of the N remaining arguments into dst.
template <size_t N, typename P>
ffi::Error Gather(const ffi::RemainingArgs& args, P* dst) {
  if (args.size() != N) return ffi::Error::InvalidArgument("wrong number of arguments");
  for (size_t i = 0; i < N; ++i) {
    ffi::ErrorOr<AnyBuffer> b = args.get<AnyBuffer>(i);
    if (b.has_error()) return b.error();
    dst[i] = b->untyped_data();
  }
  return ffi::Error::Success();
}

// --- A few buffers, each bound by type (In: N AnyBuffers) -------------------

template <typename... In>
ffi::Error CpuV1(In... in, ffi::Result<AnyBuffer> out) {
  const void* ins[] = {in.untyped_data()..., nullptr};
  ccshim_bench_k_v1(out->untyped_data(), ins);
  return ffi::Error::Success();
}

template <typename... In>
ffi::Error CpuV2(In... in, ffi::Result<AnyBuffer> out) {
  const void* ins[] = {in.untyped_data()..., nullptr};
  ccshim_legacy_status_storage st;
  XlaCustomCallStatus* s = ccshim_legacy_status_init(&st);
  ccshim_bench_k_v2(out->untyped_data(), ins, s);
  return FromStatus(s);
}

template <typename... In>
ffi::Error CpuV3(In... in, ffi::Result<AnyBuffer> out, std::string_view opaque) {
  const void* ins[] = {in.untyped_data()..., nullptr};
  char o[kOpaqueCap];
  if (!CopyOpaque(opaque, o)) return OpaqueTooLong();
  ccshim_legacy_status_storage st;
  XlaCustomCallStatus* s = ccshim_legacy_status_init(&st);
  ccshim_bench_k_v3(out->untyped_data(), ins, o, opaque.size(), s);
  return FromStatus(s);
}

template <typename... In>
ffi::Error Gpu(void* stream, In... in, ffi::Result<AnyBuffer> out, std::string_view opaque) {
  void* buffers[] = {in.untyped_data()..., out->untyped_data()};
  char o[kOpaqueCap];
  if (!CopyOpaque(opaque, o)) return OpaqueTooLong();
  ccshim_legacy_status_storage st;
  XlaCustomCallStatus* s = ccshim_legacy_status_init(&st);
  ccshim_bench_k_gpu(stream, buffers, o, opaque.size(), s);
  return FromStatus(s);
}

// --- Many buffers: the arguments as RemainingArgs (N of them) ---------------

template <size_t N>
ffi::Error CpuV1Many(ffi::RemainingArgs args, ffi::Result<AnyBuffer> out) {
  const void* ins[N];
  if (ffi::Error e = Gather<N>(args, ins); e.failure()) return e;
  ccshim_bench_k_v1(out->untyped_data(), ins);
  return ffi::Error::Success();
}

template <size_t N>
ffi::Error CpuV2Many(ffi::RemainingArgs args, ffi::Result<AnyBuffer> out) {
  const void* ins[N];
  if (ffi::Error e = Gather<N>(args, ins); e.failure()) return e;
  ccshim_legacy_status_storage st;
  XlaCustomCallStatus* s = ccshim_legacy_status_init(&st);
  ccshim_bench_k_v2(out->untyped_data(), ins, s);
  return FromStatus(s);
}

template <size_t N>
ffi::Error CpuV3Many(ffi::RemainingArgs args, ffi::Result<AnyBuffer> out, std::string_view opaque) {
  const void* ins[N];
  if (ffi::Error e = Gather<N>(args, ins); e.failure()) return e;
  char o[kOpaqueCap];
  if (!CopyOpaque(opaque, o)) return OpaqueTooLong();
  ccshim_legacy_status_storage st;
  XlaCustomCallStatus* s = ccshim_legacy_status_init(&st);
  ccshim_bench_k_v3(out->untyped_data(), ins, o, opaque.size(), s);
  return FromStatus(s);
}

template <size_t N>
ffi::Error GpuMany(void* stream, ffi::RemainingArgs args, ffi::Result<AnyBuffer> out,
                   std::string_view opaque) {
  void* buffers[N + 1];
  if (ffi::Error e = Gather<N>(args, buffers); e.failure()) return e;
  buffers[N] = out->untyped_data();
  char o[kOpaqueCap];
  if (!CopyOpaque(opaque, o)) return OpaqueTooLong();
  ccshim_legacy_status_storage st;
  XlaCustomCallStatus* s = ccshim_legacy_status_init(&st);
  ccshim_bench_k_gpu(stream, buffers, o, opaque.size(), s);
  return FromStatus(s);
}

constexpr auto CpuV1_1 = CpuV1<>;
constexpr auto CpuV1_4 = CpuV1<AnyBuffer, AnyBuffer, AnyBuffer>;
constexpr auto CpuV2_1 = CpuV2<>;
constexpr auto CpuV2_4 = CpuV2<AnyBuffer, AnyBuffer, AnyBuffer>;
constexpr auto CpuV3_1 = CpuV3<>;
constexpr auto CpuV3_4 = CpuV3<AnyBuffer, AnyBuffer, AnyBuffer>;
constexpr auto Gpu_1 = Gpu<>;
constexpr auto Gpu_4 = Gpu<AnyBuffer, AnyBuffer, AnyBuffer>;

}  // namespace

// clang-format off
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_cpu_v1_1, CpuV1_1,
    ffi::Ffi::Bind().Ret<AnyBuffer>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_cpu_v1_4, CpuV1_4,
    ffi::Ffi::Bind().Arg<AnyBuffer>().Arg<AnyBuffer>().Arg<AnyBuffer>().Ret<AnyBuffer>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_cpu_v1_16, CpuV1Many<15>,
    ffi::Ffi::Bind().RemainingArgs().Ret<AnyBuffer>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_cpu_v1_64, CpuV1Many<63>,
    ffi::Ffi::Bind().RemainingArgs().Ret<AnyBuffer>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_cpu_v2_1, CpuV2_1,
    ffi::Ffi::Bind().Ret<AnyBuffer>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_cpu_v2_4, CpuV2_4,
    ffi::Ffi::Bind().Arg<AnyBuffer>().Arg<AnyBuffer>().Arg<AnyBuffer>().Ret<AnyBuffer>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_cpu_v2_16, CpuV2Many<15>,
    ffi::Ffi::Bind().RemainingArgs().Ret<AnyBuffer>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_cpu_v2_64, CpuV2Many<63>,
    ffi::Ffi::Bind().RemainingArgs().Ret<AnyBuffer>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_cpu_v3_1, CpuV3_1,
    ffi::Ffi::Bind().Ret<AnyBuffer>().Attr<std::string_view>("opaque"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_cpu_v3_4, CpuV3_4,
    ffi::Ffi::Bind().Arg<AnyBuffer>().Arg<AnyBuffer>().Arg<AnyBuffer>().Ret<AnyBuffer>()
        .Attr<std::string_view>("opaque"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_cpu_v3_16, CpuV3Many<15>,
    ffi::Ffi::Bind().RemainingArgs().Ret<AnyBuffer>().Attr<std::string_view>("opaque"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_cpu_v3_64, CpuV3Many<63>,
    ffi::Ffi::Bind().RemainingArgs().Ret<AnyBuffer>().Attr<std::string_view>("opaque"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_gpu_1, Gpu_1,
    ffi::Ffi::Bind().Ctx<ffi::PlatformStream<void*>>().Ret<AnyBuffer>()
        .Attr<std::string_view>("opaque"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_gpu_4, Gpu_4,
    ffi::Ffi::Bind().Ctx<ffi::PlatformStream<void*>>().Arg<AnyBuffer>().Arg<AnyBuffer>()
        .Arg<AnyBuffer>().Ret<AnyBuffer>().Attr<std::string_view>("opaque"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_gpu_16, GpuMany<15>,
    ffi::Ffi::Bind().Ctx<ffi::PlatformStream<void*>>().RemainingArgs().Ret<AnyBuffer>()
        .Attr<std::string_view>("opaque"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_gpu_64, GpuMany<63>,
    ffi::Ffi::Bind().Ctx<ffi::PlatformStream<void*>>().RemainingArgs().Ret<AnyBuffer>()
        .Attr<std::string_view>("opaque"));
// clang-format on

namespace {

// --- B1r: the counts known only at run time --------------------------------
// The maintainer's port of a kernel whose call sites build their operand
// lists at run time (Pr's case): the arguments and results as RemainingArgs
// and RemainingRets, each read through get<AnyBuffer>(i) as XLA's and JAX's
// FFI examples read them, into arrays of the most the kernel is called
// with; one result passed as itself, several as their table (the legacy
// convention, as Pr passes them).

constexpr size_t kMaxRt = 64;

// Every remaining argument's data pointer, then every result's, in one table:
// the GPU convention's buffers; on CPU, the kernel's `in` and, after it, its
// results' table.
struct Buffers {
  void* all[2 * kMaxRt];
  size_t nins = 0, nouts = 0;

  ffi::Error Gather(const ffi::RemainingArgs& args, const ffi::RemainingRets& rets) {
    if (args.size() > kMaxRt || rets.size() > kMaxRt)
      return ffi::Error::InvalidArgument("more than 64 buffers");
    for (; nins < args.size(); ++nins) {
      ffi::ErrorOr<AnyBuffer> b = args.get<AnyBuffer>(nins);
      if (b.has_error()) return b.error();
      all[nins] = b->untyped_data();
    }
    for (; nouts < rets.size(); ++nouts) {
      ffi::ErrorOr<ffi::Result<AnyBuffer>> b = rets.get<AnyBuffer>(nouts);
      if (b.has_error()) return b.error();
      all[nins + nouts] = (*b)->untyped_data();
    }
    return ffi::Error::Success();
  }
  const void** in() { return const_cast<const void**>(all); }
  void* out() { return nouts == 1 ? all[nins] : static_cast<void*>(all + nins); }
};

ffi::Error CpuV1Rt(ffi::RemainingArgs args, ffi::RemainingRets rets) {
  Buffers b;
  if (ffi::Error e = b.Gather(args, rets); e.failure()) return e;
  ccshim_bench_k_v1(b.out(), b.in());
  return ffi::Error::Success();
}

ffi::Error CpuV2Rt(ffi::RemainingArgs args, ffi::RemainingRets rets) {
  Buffers b;
  if (ffi::Error e = b.Gather(args, rets); e.failure()) return e;
  ccshim_legacy_status_storage st;
  XlaCustomCallStatus* s = ccshim_legacy_status_init(&st);
  ccshim_bench_k_v2(b.out(), b.in(), s);
  return FromStatus(s);
}

ffi::Error GpuRt(void* stream, ffi::RemainingArgs args, ffi::RemainingRets rets,
                 std::string_view opaque) {
  Buffers b;
  if (ffi::Error e = b.Gather(args, rets); e.failure()) return e;
  char o[kOpaqueCap];
  if (!CopyOpaque(opaque, o)) return OpaqueTooLong();
  ccshim_legacy_status_storage st;
  XlaCustomCallStatus* s = ccshim_legacy_status_init(&st);
  ccshim_bench_k_gpu(stream, b.all, o, opaque.size(), s);
  return FromStatus(s);
}

}  // namespace

// clang-format off
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_rt_cpu_v1, CpuV1Rt,
    ffi::Ffi::Bind().RemainingArgs().RemainingRets());
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_rt_cpu_v2, CpuV2Rt,
    ffi::Ffi::Bind().RemainingArgs().RemainingRets());
XLA_FFI_DEFINE_HANDLER_SYMBOL(ccshim_bench_ffi_rt_gpu, GpuRt,
    ffi::Ffi::Bind().Ctx<ffi::PlatformStream<void*>>().RemainingArgs().RemainingRets()
        .Attr<std::string_view>("opaque"));
// clang-format on

extern "C" ccshim_bench_ffi_handler* ccshim_bench_ffi_rt(int form) {
  switch (form) {
    case 0: return ccshim_bench_ffi_rt_cpu_v1;
    case 1: return ccshim_bench_ffi_rt_cpu_v2;
    case 3: return ccshim_bench_ffi_rt_gpu;
    default: return nullptr;  // cpu_v3: no Pr to compare with
  }
}

extern "C" ccshim_bench_ffi_handler* ccshim_bench_ffi(int form, int buffers) {
  static ccshim_bench_ffi_handler* const table[4][4] = {
      {ccshim_bench_ffi_cpu_v1_1, ccshim_bench_ffi_cpu_v1_4, ccshim_bench_ffi_cpu_v1_16,
       ccshim_bench_ffi_cpu_v1_64},
      {ccshim_bench_ffi_cpu_v2_1, ccshim_bench_ffi_cpu_v2_4, ccshim_bench_ffi_cpu_v2_16,
       ccshim_bench_ffi_cpu_v2_64},
      {ccshim_bench_ffi_cpu_v3_1, ccshim_bench_ffi_cpu_v3_4, ccshim_bench_ffi_cpu_v3_16,
       ccshim_bench_ffi_cpu_v3_64},
      {ccshim_bench_ffi_gpu_1, ccshim_bench_ffi_gpu_4, ccshim_bench_ffi_gpu_16,
       ccshim_bench_ffi_gpu_64}};
  int a = buffers == 1 ? 0 : buffers == 4 ? 1 : buffers == 16 ? 2 : buffers == 64 ? 3 : -1;
  if (form < 0 || form > 3 || a < 0) return nullptr;
  return table[form][a];
}
