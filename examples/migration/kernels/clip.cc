// Legacy CPU kernel, API version 3 (status returning, unified), written in
// C++.  Its parameters come in a binary descriptor in the opaque bytes.
//
//   operand: x f32[n]    result: f32[n]    opaque: clip_descriptor (16 bytes)
//   y[i] = x[i] clamped to [lo, hi]; NaN stays NaN

#include <cstdio>
#include <cstring>

#include "descriptors.h"
#include "xla/service/custom_call_status.h"
#include "xla/service/custom_call_target_registry.h"

extern "C" void clip(void* out, const void** in, const char* opaque, size_t opaque_len,
                     XlaCustomCallStatus* status) {
  clip_descriptor d;
  char msg[128];
  if (opaque_len != sizeof d) {
    int n = std::snprintf(msg, sizeof msg, "clip: expected a %zu-byte descriptor, got %zu",
                          sizeof d, opaque_len);
    XlaCustomCallStatusSetFailure(status, msg, static_cast<size_t>(n));
    return;
  }
  std::memcpy(&d, opaque, sizeof d);
  if (!(d.lo <= d.hi)) {
    int n = std::snprintf(msg, sizeof msg, "clip: lo (%g) must not exceed hi (%g)",
                          static_cast<double>(d.lo), static_cast<double>(d.hi));
    XlaCustomCallStatusSetFailure(status, msg, static_cast<size_t>(n));
    return;
  }
  const float* x = static_cast<const float*>(in[0]);
  float* y = static_cast<float*>(out);
  for (int64_t i = 0; i < d.n; ++i) y[i] = x[i] < d.lo ? d.lo : x[i] > d.hi ? d.hi : x[i];
  XlaCustomCallStatusSetSuccess(status);
}
XLA_CPU_REGISTER_CUSTOM_CALL_TARGET(clip);
