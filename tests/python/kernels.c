/*
 * Legacy CPU kernels for the JAX tests, built like a third party's library:
 * no ccshim header, not linked against libccshim.  The status functions are
 * declared as XLA's header declares them and resolve at load time, to
 * libccshim inside a process that imported ccshim.  The same binary runs
 * through XLA's own legacy path and through ccshim.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct XlaCustomCallStatus_ XlaCustomCallStatus;
void XlaCustomCallStatusSetFailure(XlaCustomCallStatus* status, const char* message,
                                   size_t message_len);

/* A descriptor packed into the opaque bytes, NULs and all. */
typedef struct {
  float scale;
  int32_t count;
} scale_desc;

/* (f32[256]) -> f32[256]: out = 2 * x. */
void scale_v1(void* out, const void** in) {
  const float* x = in[0];
  for (int i = 0; i < 256; i++) ((float*)out)[i] = 2.0f * x[i];
}

/* The same, refusing NaN. */
void scale_v2(void* out, const void** in, XlaCustomCallStatus* status) {
  const float* x = in[0];
  for (int i = 0; i < 256; i++) {
    if (isnan(x[i])) {
      static const char msg[] = "scale_v2: NaN in the input";
      XlaCustomCallStatusSetFailure(status, msg, sizeof msg - 1);
      return;
    }
    ((float*)out)[i] = 2.0f * x[i];
  }
}

/* (f32[count]) -> f32[count], out = scale * x, both from the descriptor. */
void scale_v3(void* out, const void** in, const char* opaque, size_t len,
              XlaCustomCallStatus* status) {
  scale_desc d;
  if (len != sizeof d) {
    static const char msg[] = "scale_v3: expected an 8-byte descriptor";
    XlaCustomCallStatusSetFailure(status, msg, sizeof msg - 1);
    return;
  }
  memcpy(&d, opaque, sizeof d);
  const float* x = in[0];
  for (int32_t i = 0; i < d.count; i++) ((float*)out)[i] = d.scale * x[i];
}

/* (f32[64], f32[64]) -> (f32[64], f32[64]): the sum and the difference. */
void sumdiff_v2(void* out, const void** in, XlaCustomCallStatus* status) {
  (void)status;
  void** outs = out;
  const float* a = in[0];
  const float* b = in[1];
  for (int i = 0; i < 64; i++) {
    ((float*)outs[0])[i] = a[i] + b[i];
    ((float*)outs[1])[i] = a[i] - b[i];
  }
}

/* () -> (u8[64], s64[]): the opaque bytes as received, and their count. */
void echo_v3(void* out, const void** in, const char* opaque, size_t len,
             XlaCustomCallStatus* status) {
  (void)in;
  (void)status;
  void** outs = out;
  memset(outs[0], 0xEE, 64);
  memcpy(outs[0], opaque, len < 64 ? len : 64);
  *(int64_t*)outs[1] = (int64_t)len;
}

/* (f32[]) -> f32[]: x + 1, for loops of many calls. */
void incr_v1(void* out, const void** in) { *(float*)out = *(const float*)in[0] + 1.0f; }

/* (f32[32]) -> f32[32]: x^2, and its gradient 2 x g from (x, g). */
void square_v2(void* out, const void** in, XlaCustomCallStatus* status) {
  (void)status;
  const float* x = in[0];
  for (int i = 0; i < 32; i++) ((float*)out)[i] = x[i] * x[i];
}
void square_grad_v2(void* out, const void** in, XlaCustomCallStatus* status) {
  (void)status;
  const float* x = in[0];
  const float* g = in[1];
  for (int i = 0; i < 32; i++) ((float*)out)[i] = 2.0f * x[i] * g[i];
}

/* () -> s32[]: always fails with the opaque text as its message. */
void fail_v3(void* out, const void** in, const char* opaque, size_t len,
             XlaCustomCallStatus* status) {
  (void)out;
  (void)in;
  XlaCustomCallStatusSetFailure(status, opaque, len);
}
