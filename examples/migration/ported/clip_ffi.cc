// Stage 3: clip ported to the typed FFI with XLA's C++ bindings.  The
// descriptor became two attributes, the element count comes from the
// buffer, and a bad attribute is INVALID_ARGUMENT.  The messages stay the
// legacy kernel's, so that `ccshim conform --against` compares failures too.

#include <cstdio>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

static ffi::Error Clip(ffi::Buffer<ffi::F32> x, float lo, float hi, ffi::ResultBuffer<ffi::F32> y) {
  if (!(lo <= hi)) {
    char msg[128];
    std::snprintf(msg, sizeof msg, "clip: lo (%g) must not exceed hi (%g)", static_cast<double>(lo),
                  static_cast<double>(hi));
    return ffi::Error::InvalidArgument(msg);
  }
  const float* in = x.typed_data();
  float* out = y->typed_data();
  for (size_t i = 0; i < x.element_count(); ++i) out[i] = in[i] < lo ? lo : in[i] > hi ? hi : in[i];
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(clip_ffi, Clip,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Attr<float>("lo")
                                  .Attr<float>("hi")
                                  .Ret<ffi::Buffer<ffi::F32>>());
