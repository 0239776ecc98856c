// The kernel of XLA's custom-call documentation, A[i] = B[i % 128] + C[i],
// written as legacy code in the three CPU forms, with XLA's own headers and
// registration macros (here, ccshim's drop-ins).  Nothing in this file knows
// about ccshim.
//
//   signature: (f32[128], f32[2048]) -> f32[2048]

#include <cmath>
#include <cstdio>
#include <cstring>

#include "xla/service/custom_call_status.h"
#include "xla/service/custom_call_target_registry.h"

namespace {
constexpr int kB = 128;
constexpr int kA = 2048;
}  // namespace

// API version 1 (ORIGINAL): no status, cannot fail.
extern "C" void add_v1(void* out, const void** in) {
  float* a = reinterpret_cast<float*>(out);
  const float* b = reinterpret_cast<const float*>(in[0]);
  const float* c = reinterpret_cast<const float*>(in[1]);
  for (int i = 0; i < kA; ++i) a[i] = b[i % kB] + c[i];
}
XLA_CPU_REGISTER_CUSTOM_CALL_TARGET(add_v1);

// API version 2 (STATUS_RETURNING): refuses non-finite input.
extern "C" void add_v2(void* out, const void** in, XlaCustomCallStatus* status) {
  float* a = reinterpret_cast<float*>(out);
  const float* b = reinterpret_cast<const float*>(in[0]);
  const float* c = reinterpret_cast<const float*>(in[1]);
  for (int i = 0; i < kA; ++i) {
    if (!std::isfinite(c[i])) {
      char msg[64];
      int n = std::snprintf(msg, sizeof msg, "add_v2: C[%d] is not finite", i);
      XlaCustomCallStatusSetFailure(status, msg, static_cast<size_t>(n));
      return;
    }
    a[i] = b[i % kB] + c[i];
  }
  XlaCustomCallStatusSetSuccess(status);
}
XLA_CPU_REGISTER_CUSTOM_CALL_TARGET(add_v2);

// API version 3 (STATUS_RETURNING_UNIFIED): a packed binary descriptor in
// the opaque bytes, as early jaxlib kernels passed theirs:
//   struct { float scale; int32_t count; }   (8 bytes, NULs likely)
// A[i] = scale * (B[i % 128] + C[i]) for i < count.
struct AddDescriptor {
  float scale;
  int32_t count;
};

extern "C" void add_v3(void* out, const void** in, const char* opaque, size_t opaque_len,
                       XlaCustomCallStatus* status) {
  AddDescriptor d;
  if (opaque_len != sizeof d) {
    char msg[96];
    int n = std::snprintf(msg, sizeof msg, "add_v3: expected an 8-byte descriptor, got %zu bytes",
                          opaque_len);
    XlaCustomCallStatusSetFailure(status, msg, static_cast<size_t>(n));
    return;
  }
  std::memcpy(&d, opaque, sizeof d);
  if (d.count < 0 || d.count > kA) {
    static const char msg[] = "add_v3: count out of range";
    XlaCustomCallStatusSetFailure(status, msg, sizeof msg - 1);
    return;
  }
  float* a = reinterpret_cast<float*>(out);
  const float* b = reinterpret_cast<const float*>(in[0]);
  const float* c = reinterpret_cast<const float*>(in[1]);
  for (int i = 0; i < d.count; ++i) a[i] = d.scale * (b[i % kB] + c[i]);
  for (int i = d.count; i < kA; ++i) a[i] = 0;
}
XLA_CPU_REGISTER_CUSTOM_CALL_TARGET(add_v3);
