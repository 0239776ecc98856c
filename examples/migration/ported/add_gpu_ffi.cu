// The GPU example (examples/legacy/add_gpu.cu) ported to the typed FFI:
// the stream is asked for by type instead of arriving as the first
// parameter, buffers are named instead of indexed in buffers[], the scale
// is a float attribute instead of decimal text in the opaque, and the
// handler declares itself safe for CUDA-graph capture.  Written once for
// CUDA and HIP, like the legacy kernel.

#include "../../legacy/gpu_vendor.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

__global__ void add_kernel(const float* b, const float* c, float* a, float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = scale * (b[i % 128] + c[i]);
}

ffi::Error AddGpu(gpuStream_t stream, ffi::Buffer<ffi::F32> b, ffi::Buffer<ffi::F32> c, float scale,
                  ffi::ResultBuffer<ffi::F32> a) {
  if (b.element_count() != 128 || c.element_count() != a->element_count())
    return ffi::Error::InvalidArgument("add_gpu_ffi: expected f32[128], f32[n] -> f32[n]");
  int n = static_cast<int>(c.element_count());
  add_kernel<<<(n + 255) / 256, 256, 0, stream>>>(b.typed_data(), c.typed_data(), a->typed_data(),
                                                  scale, n);
  gpuError_t err = gpuGetLastError();
  if (err != gpuSuccess) return ffi::Error::Internal(gpuGetErrorString(err));
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(add_gpu_ffi, AddGpu,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<gpuStream_t>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Attr<float>("scale")
                                  .Ret<ffi::Buffer<ffi::F32>>(),
                              {ffi::Traits::kCmdBufferCompatible});
