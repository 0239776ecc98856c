/*
 * Legacy CPU kernel, API version 1 (original: no status), with a tuple
 * result: `out` is a table of result buffers.  The element count comes in
 * an operand.
 *
 *   operands: n s32[], x f32[n]    results: (mean f32[], variance f32[])
 */
#include <stdint.h>

#include "xla/service/custom_call_target_registry.h"

void moments(void* out, const void** in) {
  int32_t n = *(const int32_t*)in[0];
  const float* x = (const float*)in[1];
  float* mean = (float*)((void**)out)[0];
  float* variance = (float*)((void**)out)[1];
  double sum = 0, squares = 0;
  for (int32_t i = 0; i < n; i++) sum += x[i];
  double m = n > 0 ? sum / n : 0;
  for (int32_t i = 0; i < n; i++) squares += (x[i] - m) * (x[i] - m);
  *mean = (float)m;
  *variance = (float)(n > 0 ? squares / n : 0);
}
XLA_CPU_REGISTER_CUSTOM_CALL_TARGET(moments);
