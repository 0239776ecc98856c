/*
 * The end-to-end benchmark's kernel in two forms: as legacy code (CPU v2,
 * for ccshim to wrap) and as a native typed-FFI handler written by hand
 * against ccshim/xla_ffi.h.  Both compute out = x + 1 on an f32 scalar.
 */
#include <stddef.h>

#include "ccshim/xla_ffi.h"
#include "xla/service/custom_call_status.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT void e2e_incr_v2(void* out, const void** in, XlaCustomCallStatus* status) {
  (void)status;
  *(float*)out = *(const float*)in[0] + 1.0f;
}

static XLA_FFI_Error* invalid(const XLA_FFI_Api* api, const char* message) {
  XLA_FFI_Error_Create_Args a = {XLA_FFI_Error_Create_Args_STRUCT_SIZE, NULL, message,
                                 XLA_FFI_Error_Code_INVALID_ARGUMENT};
  return api->XLA_FFI_Error_Create(&a);
}

EXPORT XLA_FFI_Error* e2e_incr_typed(XLA_FFI_CallFrame* frame) {
  XLA_FFI_InternalExtension* ext = frame->extension_start;
  if (ext != NULL && ext->type == XLA_FFI_Extension_Metadata) {
    XLA_FFI_Metadata* md = ((XLA_FFI_Metadata_Extension*)ext)->metadata;
    md->api_version.major_version = 0;
    md->api_version.minor_version = 1;
    md->traits = 0;
    return NULL;
  }
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return NULL;
  if (frame->args.size != 1 || frame->rets.size != 1)
    return invalid(frame->api, "e2e_incr_typed: expected one argument and one result");
  const XLA_FFI_Buffer* x = frame->args.args[0];
  XLA_FFI_Buffer* y = frame->rets.rets[0];
  *(float*)y->data = *(const float*)x->data + 1.0f;
  return NULL;
}
