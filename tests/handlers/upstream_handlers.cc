// Typed-FFI handlers written with XLA's own C++ bindings (xla/ffi/api/ffi.h
// from jaxlib's include dir), as JAX's examples write them.  Nothing here
// knows about ccshim: the tests run these handlers in ccshim's embedded
// runtime (test_upstream_handlers.c) and in jaxlib
// (test_jax_cross_runtime.py).  The bindings check the call frame's size
// exactly, speak the metadata protocol and decode every attribute kind, so
// they test the runtime's fidelity.
//
// Each handler is exported with C linkage under a plain name; the C side
// declares them in upstream_handlers.h against ccshim's header.

#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

#define EXPORT extern "C" __attribute__((visibility("default")))

// --- Buffers and a scalar attribute --------------------------------------

static ffi::Error Scale(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y, float factor) {
  if (x.element_count() != y->element_count())
    return ffi::Error::InvalidArgument("Scale: shapes differ");
  for (size_t i = 0; i < x.element_count(); ++i) y->typed_data()[i] = x.typed_data()[i] * factor;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER(
    kScale, Scale,
    ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>().Attr<float>(
        "factor"));

EXPORT XLA_FFI_Error* up_scale(XLA_FFI_CallFrame* frame) { return kScale(frame); }

// --- Every attribute kind, a dictionary, a decoded enum and struct --------

enum class Color : int32_t { kRed = 1, kGreen = 2, kBlue = 3 };
XLA_FFI_REGISTER_ENUM_ATTR_DECODING(Color);

struct Range {
  int64_t lo;
  int64_t hi;
};
XLA_FFI_REGISTER_STRUCT_ATTR_DECODING(Range, ffi::StructMember<int64_t>("lo"),
                                      ffi::StructMember<int64_t>("hi"));

// Writes what it decoded into a f64 result, one slot per value, so the
// caller can check each one.
static ffi::Error Attrs(ffi::ResultBuffer<ffi::F64> out, bool b, int8_t i8, int16_t i16,
                        int32_t i32, int64_t i64, uint8_t u8, uint16_t u16, uint32_t u32,
                        uint64_t u64, float f32, double f64, std::string_view str,
                        ffi::Span<const int64_t> arr, ffi::Dictionary dict, Color color,
                        Range range) {
  if (out->element_count() < 24) return ffi::Error::InvalidArgument("Attrs: need 24 result slots");
  double* o = out->typed_data();
  o[0] = b;
  o[1] = i8;
  o[2] = i16;
  o[3] = i32;
  o[4] = static_cast<double>(i64);
  o[5] = u8;
  o[6] = u16;
  o[7] = u32;
  o[8] = static_cast<double>(u64);
  o[9] = f32;
  o[10] = f64;
  o[11] = static_cast<double>(str.size());
  // Count NUL bytes, to see that they arrived intact.
  o[12] = 0;
  for (char c : str) o[12] += (c == '\0');
  o[13] = static_cast<double>(arr.size());
  o[14] = 0;
  for (int64_t v : arr) o[14] += static_cast<double>(v);
  auto inner_i = dict.get<int32_t>("inner_i32");
  auto inner_s = dict.get<std::string_view>("inner_str");
  if (!inner_i.has_value() || !inner_s.has_value())
    return ffi::Error::InvalidArgument("Attrs: dictionary members missing");
  o[15] = *inner_i;
  o[16] = static_cast<double>(inner_s->size());
  o[17] = static_cast<double>(dict.size());
  o[18] = static_cast<double>(static_cast<int32_t>(color));
  o[19] = static_cast<double>(range.lo);
  o[20] = static_cast<double>(range.hi);
  o[21] = static_cast<double>(static_cast<unsigned char>(str.empty() ? 0 : str[0]));
  o[22] = static_cast<double>(static_cast<unsigned char>(str.empty() ? 0 : str.back()));
  o[23] = 1;  // reached the end
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER(kAttrs, Attrs,
                       ffi::Ffi::Bind()
                           .Ret<ffi::Buffer<ffi::F64>>()
                           .Attr<bool>("b")
                           .Attr<int8_t>("i8")
                           .Attr<int16_t>("i16")
                           .Attr<int32_t>("i32")
                           .Attr<int64_t>("i64")
                           .Attr<uint8_t>("u8")
                           .Attr<uint16_t>("u16")
                           .Attr<uint32_t>("u32")
                           .Attr<uint64_t>("u64")
                           .Attr<float>("f32")
                           .Attr<double>("f64")
                           .Attr<std::string_view>("str")
                           .Attr<ffi::Span<const int64_t>>("arr")
                           .Attr<ffi::Dictionary>("dict")
                           .Attr<Color>("color")
                           .Attr<Range>("range"));

EXPORT XLA_FFI_Error* up_attrs(XLA_FFI_CallFrame* frame) { return kAttrs(frame); }

// --- An error return -----------------------------------------------------

static ffi::Error Fail(int64_t code) {
  return ffi::Error(static_cast<ffi::ErrorCode>(code), "upstream handler failed");
}

XLA_FFI_DEFINE_HANDLER(kFail, Fail, ffi::Ffi::Bind().Attr<int64_t>("code"));

EXPORT XLA_FFI_Error* up_fail(XLA_FFI_CallFrame* frame) { return kFail(frame); }

// --- Remaining arguments, a token, and the platform stream ----------------

static ffi::Error SumAll(ffi::RemainingArgs args, ffi::ResultBuffer<ffi::F64> out) {
  double sum = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    auto buf = args.get<ffi::AnyBuffer>(i);
    if (!buf.has_value()) return buf.error();
    if (buf->element_type() == ffi::TOKEN) continue;
    if (buf->element_type() != ffi::F32)
      return ffi::Error::InvalidArgument("SumAll: f32 arguments only");
    const float* p = buf->typed_data<float>();
    for (size_t j = 0; j < buf->element_count(); ++j) sum += p[j];
  }
  out->typed_data()[0] = sum;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER(kSumAll, SumAll,
                       ffi::Ffi::Bind().RemainingArgs().Ret<ffi::Buffer<ffi::F64>>());

EXPORT XLA_FFI_Error* up_sum_all(XLA_FFI_CallFrame* frame) { return kSumAll(frame); }

static ffi::Error Stream(void* stream, ffi::ResultBuffer<ffi::U64> out) {
  out->typed_data()[0] = reinterpret_cast<uintptr_t>(stream);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER(
    kStream, Stream,
    ffi::Ffi::Bind().Ctx<ffi::PlatformStream<void*>>().Ret<ffi::Buffer<ffi::U64>>());

EXPORT XLA_FFI_Error* up_stream(XLA_FFI_CallFrame* frame) { return kStream(frame); }

// --- State made at instantiate, read at execute ---------------------------

struct Counter {
  static ffi::TypeId id;
  explicit Counter(int32_t start) : value(start) {}
  int32_t value;
};
ffi::TypeId Counter::id = {};

static ffi::ErrorOr<std::unique_ptr<Counter>> CounterInstantiate(int32_t start) {
  return std::make_unique<Counter>(start);
}

XLA_FFI_DEFINE_HANDLER(kCounterInstantiate, CounterInstantiate,
                       ffi::Ffi::BindInstantiate().Attr<int32_t>("start"));

static ffi::Error CounterExecute(Counter* counter, ffi::ResultBuffer<ffi::S32> out) {
  out->typed_data()[0] = ++counter->value;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER(kCounterExecute, CounterExecute,
                       ffi::Ffi::Bind().Ctx<ffi::State<Counter>>().Ret<ffi::Buffer<ffi::S32>>());

EXPORT XLA_FFI_Error* up_counter_instantiate(XLA_FFI_CallFrame* frame) {
  return kCounterInstantiate(frame);
}
EXPORT XLA_FFI_Error* up_counter_execute(XLA_FFI_CallFrame* frame) {
  return kCounterExecute(frame);
}

static const XLA_FFI_TypeInfo kCounterInfo = ffi::MakeTypeInfo<Counter>();

// Registers Counter's type with a runtime.  The id lives in Counter::id,
// process-wide: the first runtime to register assigns it, a second is given
// the same id explicitly.
EXPORT XLA_FFI_Error* up_register_types(const XLA_FFI_Api* api) {
  return ffi::Ffi::RegisterTypeId(api, "ccshim.test.UpstreamCounter", &Counter::id, &kCounterInfo);
}

// For jax.ffi.register_ffi_type, which takes the id and the info by pointer.
EXPORT XLA_FFI_TypeId* up_counter_type_id(void) { return &Counter::id; }
EXPORT const XLA_FFI_TypeInfo* up_counter_type_info(void) { return &kCounterInfo; }

// The FFI version these bindings report, for the test to check.
EXPORT int up_api_minor(void) { return XLA_FFI_API_MINOR; }
