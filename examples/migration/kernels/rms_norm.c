/*
 * Legacy CPU kernel, API version 2 (status returning), written in C.  Its
 * dimensions come in a packed descriptor passed as the first operand, the
 * way early jaxlib kernels passed theirs.
 *
 *   operands: descriptor u8[16], x f32[rows, cols]    result: f32[rows, cols]
 *   y[r, c] = x[r, c] / sqrt(mean(x[r, :]^2) + eps)
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "descriptors.h"
#include "xla/service/custom_call_status.h"
#include "xla/service/custom_call_target_registry.h"

void rms_norm(void* out, const void** in, XlaCustomCallStatus* status) {
  rms_norm_descriptor d;
  memcpy(&d, in[0], sizeof d);
  if (d.rows <= 0 || d.cols <= 0 || !(d.eps > 0)) {
    char msg[128];
    int n = snprintf(msg, sizeof msg, "rms_norm: bad descriptor: rows %d, cols %d, eps %g",
                     (int)d.rows, (int)d.cols, (double)d.eps);
    XlaCustomCallStatusSetFailure(status, msg, (size_t)n);
    return;
  }
  const float* x = (const float*)in[1];
  float* y = (float*)out;
  for (int32_t r = 0; r < d.rows; r++) {
    const float* row = x + (size_t)r * (size_t)d.cols;
    double squares = 0;
    for (int32_t c = 0; c < d.cols; c++) squares += (double)row[c] * row[c];
    float scale = (float)(1.0 / sqrt(squares / d.cols + d.eps));
    for (int32_t c = 0; c < d.cols; c++) y[(size_t)r * (size_t)d.cols + c] = row[c] * scale;
  }
  XlaCustomCallStatusSetSuccess(status);
}
XLA_CPU_REGISTER_CUSTOM_CALL_TARGET(rms_norm);
