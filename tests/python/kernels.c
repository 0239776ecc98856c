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

/* --- Shape classes: what the kernel is handed, recorded in its output ------ */

/* () -> f32[4096]: out[i] = i / 2, written through `out` as one buffer. */
void iota4096_v1(void* out, const void** in) {
  (void)in;
  for (int i = 0; i < 4096; i++) ((float*)out)[i] = (float)i * 0.5f;
}

/* 48 bytes from in[0] to out, as laid out in memory: the bytes show the
 * physical layout XLA gave each buffer (f32[3,4] <-> f32[12]). */
void copy48_v1(void* out, const void** in) { memcpy(out, in[0], 48); }

/* (f32[0], f32[4]) -> (f32[0], f32[4]): out[1] = 3 * in[1], and what the
 * kernel saw of the zero-size buffers in out[1]'s last slot:
 * 1 (in[0] NULL) + 2 (out[0] NULL) + 4 (out[0] == in[0]). */
void zero_size_v2(void* out, const void** in, XlaCustomCallStatus* status) {
  (void)status;
  void** outs = out;
  const float* x = in[1];
  float* y = outs[1];
  for (int i = 0; i < 3; i++) y[i] = 3.0f * x[i];
  y[3] = (float)((in[0] == NULL) + 2 * (outs[0] == NULL) + 4 * (outs[0] == in[0]));
}

/* (f32[8], f32[8]) -> f32[8] with operand 0 aliased to the result:
 * out = in[0] + in[1], and 1000 added when out is in[0]. */
void accumulate_v1(void* out, const void** in) {
  const float* a = in[0];
  const float* b = in[1];
  float sum[8];
  for (int i = 0; i < 8; i++) sum[i] = a[i] + b[i] + (out == (const void*)a ? 1000.0f : 0.0f);
  memcpy(out, sum, sizeof sum);
}

/* (s32[], f32[n,16]) -> f32[n,16], n the value of operand 0: out = 2 * x
 * row by row, as jaxlib-style kernels take their batch size. */
void batched_double_v1(void* out, const void** in) {
  int32_t n = *(const int32_t*)in[0];
  const float* x = in[1];
  for (int32_t i = 0; i < n * 16; i++) ((float*)out)[i] = 2.0f * x[i];
}

/* Sizes carried in arrays, as real projects passed them (issue 20).
 * (n: s64[1], x: f32[...n[0]]) -> f32[]: the sum of the n elements of x,
 * n an s64[1] as veros passed its sizes. */
void count_sum_v1(void* out, const void** in) {
  int64_t n = ((const int64_t*)in[0])[0];
  const float* x = in[1];
  float s = 0.0f;
  for (int64_t i = 0; i < n; i++) s += x[i];
  *(float*)out = s;
}

/* (shape: s32[2], x: f32[shape[0],shape[1]]) -> f32[shape[0],shape[1]]:
 * out = x + row index, the dims read from a shape array as an FFT kernel
 * reads its s32[r] shape. */
void shape_rows_v1(void* out, const void** in) {
  const int32_t* shape = in[0];
  const float* x = in[1];
  for (int32_t r = 0; r < shape[0]; r++)
    for (int32_t c = 0; c < shape[1]; c++)
      ((float*)out)[r * shape[1] + c] = x[r * shape[1] + c] + (float)r;
}

/* (n: s64[], x: f32[...n]) -> f32[...n]: out = 3 * x over n elements, n
 * the element count of x, as extending-jax passed it. */
void count_triple_v2(void* out, const void** in, XlaCustomCallStatus* status) {
  (void)status;
  int64_t n = *(const int64_t*)in[0];
  const float* x = in[1];
  for (int64_t i = 0; i < n; i++) ((float*)out)[i] = 3.0f * x[i];
}

/* (f32[4], token[]) -> (f32[4], token[]): out[0] = x, recording the
 * pointers it is handed for the token operand and result, and the order
 * of the calls (issue 20: what XLA hands a kernel for a token). */
void* token_seen[2];
int token_calls[8];
int token_ncalls;
void token_probe_v2(void* out, const void** in, XlaCustomCallStatus* status) {
  (void)status;
  void** table = out;
  token_seen[0] = (void*)in[1];
  token_seen[1] = table[1];
  memcpy(table[0], in[0], 4 * sizeof(float));
  if (token_ncalls < 8) token_calls[token_ncalls++] = (int)((const float*)in[0])[0];
}
