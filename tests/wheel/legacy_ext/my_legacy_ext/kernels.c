/*
 * The kernel of a small legacy JAX extension (my_legacy_ext), written as
 * XLA's custom-call documentation wrote CPU kernels for API version 2
 * (STATUS_RETURNING), with XLA's own status header:
 *
 *   (f32[256]) -> f32[256]: out[i] = 2 * x[i] + 1, refusing NaN.
 *
 * Compiled by tests/wheel/use_wheel.py against ccshim.include_dirs() of the
 * installed wheel; not linked against anything, the status setters resolve
 * at load time.
 */
#include <math.h>
#include <stdio.h>

#include "xla/service/custom_call_status.h"

void affine_v2(void* out, const void** in, XlaCustomCallStatus* status) {
  const float* x = in[0];
  float* y = out;
  for (int i = 0; i < 256; i++) {
    if (isnan(x[i])) {
      char msg[64];
      int n = snprintf(msg, sizeof msg, "my_affine: x[%d] is NaN", i);
      XlaCustomCallStatusSetFailure(status, msg, (size_t)n);
      return;
    }
    y[i] = 2.0f * x[i] + 1.0f;
  }
  XlaCustomCallStatusSetSuccess(status);
}
