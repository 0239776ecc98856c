/* Uses each public header of an installed ccshim, the drop-in XLA headers
 * included: wraps a legacy kernel and runs it in the embedded runtime. */
#include <stdio.h>
#include <string.h>

#include "ccshim/ccshim.h"
#include "xla/service/custom_call_status.h"
#include "xla/service/custom_call_target_registry.h"

static void add_one(void* out, const void** in, XlaCustomCallStatus* status) {
  *(float*)out = *(const float*)in[0] + 1.0f;
  XlaCustomCallStatusSetSuccess(status);
}
XLA_CPU_REGISTER_CUSTOM_CALL_TARGET(add_one);

int main(void) {
  ccshim_adapter* a;
  if (ccshim_wrap_registered("add_one", "Host", 2, "(f32[]) -> f32[]", NULL, &a)) {
    fprintf(stderr, "wrap: %s\n", ccshim_last_error());
    return 1;
  }
  ccshim_context* ctx;
  ccshim_frame_builder* fb;
  float x = 41, y = 0;
  if (ccshim_context_new(NULL, &ctx) || ccshim_frame_builder_new(&fb) ||
      ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, &x, 0, NULL) ||
      ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F32, &y, 0, NULL) ||
      ccshim_invoke_handler(ccshim_adapter_handler(a), ctx, XLA_FFI_ExecutionStage_EXECUTE, fb,
                            NULL)) {
    fprintf(stderr, "run: %s\n", ccshim_last_error());
    return 1;
  }
  printf("ccshim %s: add_one(41) = %g\n", ccshim_version(), y);
  ccshim_frame_builder_free(fb);
  ccshim_context_free(ctx);
  ccshim_adapter_free(a);
  return y == 42.0f ? 0 : 1;
}
