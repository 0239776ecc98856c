// The documentation's kernel, A[i] = B[i % 128] + C[i], in the legacy GPU
// form, written once for CUDA (nvcc) and HIP (hipcc -x hip) through
// gpu_vendor.h.  buffers[] holds the operands then the results:
//   buffers[0] = B (f32[128]), buffers[1] = C (f32[2048]), buffers[2] = A.
// The opaque bytes, when present, are a decimal scale: A = scale * (B + C).

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gpu_vendor.h"
#include "xla/service/custom_call_status.h"
#include "xla/service/custom_call_target_registry.h"

namespace {

__global__ void add_kernel(const float* b, const float* c, float* a, float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = scale * (b[i % 128] + c[i]);
}

float parse_scale(const char* opaque, size_t opaque_len, bool* ok) {
  *ok = true;
  if (opaque_len == 0) return 1.0f;
  char* end = nullptr;
  float scale = std::strtof(opaque, &end);  // opaque is NUL-terminated
  *ok = end == opaque + opaque_len;
  return scale;
}

void launch(gpuStream_t stream, void** buffers, float scale) {
  const float* b = static_cast<const float*>(buffers[0]);
  const float* c = static_cast<const float*>(buffers[1]);
  float* a = static_cast<float*>(buffers[2]);
  add_kernel<<<2048 / 256, 256, 0, stream>>>(b, c, a, scale, 2048);
}

}  // namespace

// API version 1 on GPU: no status.
extern "C" void add_gpu_v1(gpuStream_t stream, void** buffers, const char* opaque,
                           size_t opaque_len) {
  bool ok;
  float scale = parse_scale(opaque, opaque_len, &ok);
  launch(stream, buffers, ok ? scale : 1.0f);
}
XLA_REGISTER_CUSTOM_CALL_TARGET(add_gpu_v1, GPU_PLATFORM_NAME);

// API versions 2 and 3 on GPU (one signature): launch errors and a bad
// opaque become failures.
extern "C" void add_gpu_v2(gpuStream_t stream, void** buffers, const char* opaque,
                           size_t opaque_len, XlaCustomCallStatus* status) {
  bool ok;
  float scale = parse_scale(opaque, opaque_len, &ok);
  if (!ok) {
    static const char msg[] = "add_gpu_v2: the opaque is not a number";
    XlaCustomCallStatusSetFailure(status, msg, sizeof msg - 1);
    return;
  }
  launch(stream, buffers, scale);
  gpuError_t err = gpuGetLastError();
  if (err != gpuSuccess) {
    const char* msg = gpuGetErrorString(err);
    XlaCustomCallStatusSetFailure(status, msg, std::strlen(msg));
  }
}
XLA_REGISTER_CUSTOM_CALL_TARGET(add_gpu_v2, GPU_PLATFORM_NAME);
