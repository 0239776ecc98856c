// The GPU benchmark's kernel, out = a * x + y over n floats, twice: in the
// legacy GPU form (API version 2: the stream first, buffers[] holding x, y
// then out, n and a in a binary descriptor, as released extensions pass
// them) and as the typed-FFI handler its author would write by hand with
// XLA's C++ bindings (the stream by type, n from the buffers, a as an
// attribute).  bench/jax_gpu.py times both, and the legacy one through XLA's
// legacy path and through ccshim.

#include <cstdint>
#include <cstring>

#include <cuda_runtime.h>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

__global__ void saxpy_kernel(int64_t n, float a, const float* x, const float* y, float* out) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

cudaError_t launch(cudaStream_t stream, int64_t n, float a, const float* x, const float* y,
                   float* out) {
  const int threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  saxpy_kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(n, a, x, y, out);
  return cudaGetLastError();
}

// The descriptor the legacy call's opaque holds.
struct saxpy_desc {
  int64_t n;
  float a;
  float pad;
};

}  // namespace

// XlaCustomCallStatus is opaque to a legacy kernel: it only sets failures.
struct XlaCustomCallStatus_;
typedef struct XlaCustomCallStatus_ XlaCustomCallStatus;
extern "C" void XlaCustomCallStatusSetFailure(XlaCustomCallStatus* status, const char* message,
                                              size_t message_len);

extern "C" __attribute__((visibility("default"))) void saxpy_gpu_v2(cudaStream_t stream,
                                                                    void** buffers,
                                                                    const char* opaque,
                                                                    size_t opaque_len,
                                                                    XlaCustomCallStatus* status) {
  saxpy_desc d;
  if (opaque_len != sizeof d) {
    static const char msg[] = "saxpy_gpu_v2: expected a 16-byte descriptor";
    XlaCustomCallStatusSetFailure(status, msg, sizeof msg - 1);
    return;
  }
  std::memcpy(&d, opaque, sizeof d);
  cudaError_t err = launch(stream, d.n, d.a, static_cast<const float*>(buffers[0]),
                           static_cast<const float*>(buffers[1]), static_cast<float*>(buffers[2]));
  if (err != cudaSuccess) {
    const char* msg = cudaGetErrorString(err);
    XlaCustomCallStatusSetFailure(status, msg, std::strlen(msg));
  }
}

namespace {

ffi::Error Saxpy(cudaStream_t stream, ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::F32> y, float a,
                 ffi::ResultBuffer<ffi::F32> out) {
  const int64_t n = static_cast<int64_t>(x.element_count());
  if (static_cast<int64_t>(y.element_count()) != n ||
      static_cast<int64_t>(out->element_count()) != n)
    return ffi::Error::InvalidArgument("saxpy_gpu_ffi: expected (f32[n], f32[n]) -> f32[n]");
  cudaError_t err = launch(stream, n, a, x.typed_data(), y.typed_data(), out->typed_data());
  if (err != cudaSuccess) return ffi::Error::Internal(cudaGetErrorString(err));
  return ffi::Error::Success();
}

}  // namespace

// Exported by this declaration: the library hides everything else.
extern "C" __attribute__((visibility("default"))) XLA_FFI_Error* saxpy_gpu_ffi(
    XLA_FFI_CallFrame* call_frame);

XLA_FFI_DEFINE_HANDLER_SYMBOL(saxpy_gpu_ffi, Saxpy,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Attr<float>("a")
                                  .Ret<ffi::Buffer<ffi::F32>>());
