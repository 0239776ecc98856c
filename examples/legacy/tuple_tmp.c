/*
 * A tuple result with a temp buffer, the legacy idiom for scratch space: the
 * kernel returns (result, scratch) and the caller ignores the scratch.
 * Written in C, with the drop-in headers.  out is a table of result buffers.
 *
 *   signature: (f32[128], f32[2048]) -> (f32[2048], f32[2048])
 *   result[i] = 2 * B[i % 128] + C[i], with 2 * B staged in the scratch.
 */
#include <stddef.h>

#include "xla/service/custom_call_status.h"
#include "xla/service/custom_call_target_registry.h"

void tuple_tmp_v2(void* out, const void** in, XlaCustomCallStatus* status) {
  void** outs = (void**)out;
  float* result = (float*)outs[0];
  float* scratch = (float*)outs[1];
  const float* b = (const float*)in[0];
  const float* c = (const float*)in[1];
  if (result == scratch) {
    XlaCustomCallStatusSetFailure(status, "tuple_tmp_v2: result and scratch alias", 40);
    return;
  }
  for (int i = 0; i < 2048; i++) scratch[i] = 2.0f * b[i % 128];
  for (int i = 0; i < 2048; i++) result[i] = scratch[i] + c[i];
}
XLA_CPU_REGISTER_CUSTOM_CALL_TARGET(tuple_tmp_v2);
