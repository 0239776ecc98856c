// moments ported to the typed FFI: each result of the legacy tuple is its
// own typed result, and the element count comes from the buffer.  The
// count operand stays for now, so that the call site and `ccshim conform
// --against` see the same operands as the legacy kernel; it goes when the
// legacy kernel does.

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

static ffi::Error Moments(ffi::BufferR0<ffi::S32> /*n, redundant*/, ffi::Buffer<ffi::F32> x,
                          ffi::ResultBufferR0<ffi::F32> mean,
                          ffi::ResultBufferR0<ffi::F32> variance) {
  const float* v = x.typed_data();
  size_t n = x.element_count();
  double sum = 0, squares = 0;
  for (size_t i = 0; i < n; ++i) sum += v[i];
  double m = n > 0 ? sum / static_cast<double>(n) : 0;
  for (size_t i = 0; i < n; ++i) squares += (v[i] - m) * (v[i] - m);
  *mean->typed_data() = static_cast<float>(m);
  *variance->typed_data() = static_cast<float>(n > 0 ? squares / static_cast<double>(n) : 0);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(moments_ffi, Moments,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::BufferR0<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::BufferR0<ffi::F32>>()
                                  .Ret<ffi::BufferR0<ffi::F32>>());
