/*
 * A typed-FFI handler written in plain C, registered in ccshim's embedded
 * runtime and invoked on real buffers with no XLA in the process.
 *
 *   saxpy: y = alpha * x + y0, with alpha an f32 attribute.
 */
#include <stdio.h>
#include <string.h>

#include "ccshim/runtime.h"

static XLA_FFI_Error* fail(const XLA_FFI_Api* api, const char* message) {
  XLA_FFI_Error_Create_Args args = {XLA_FFI_Error_Create_Args_STRUCT_SIZE, NULL, message,
                                    XLA_FFI_Error_Code_INVALID_ARGUMENT};
  return api->XLA_FFI_Error_Create(&args);
}

static XLA_FFI_Error* saxpy(XLA_FFI_CallFrame* frame) {
  /* The metadata query comes first, and touches nothing else. */
  XLA_FFI_InternalExtension* ext = frame->extension_start;
  if (ext != NULL && ext->type == XLA_FFI_Extension_Metadata) {
    XLA_FFI_Metadata* md = ((XLA_FFI_Metadata_Extension*)ext)->metadata;
    md->api_version.major_version = 0;
    md->api_version.minor_version = 1;
    md->traits = 0;
    return NULL;
  }
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return NULL;
  const XLA_FFI_Api* api = frame->api;
  if (frame->args.size != 2 || frame->rets.size != 1 || frame->attrs.size != 1)
    return fail(api, "saxpy: expected (x, y0) -> y and an attribute alpha");
  const XLA_FFI_Scalar* alpha = frame->attrs.attrs[0];
  if (frame->attrs.types[0] != XLA_FFI_AttrType_SCALAR || alpha->dtype != XLA_FFI_DataType_F32)
    return fail(api, "saxpy: alpha must be an f32 scalar");
  const XLA_FFI_Buffer* x = frame->args.args[0];
  const XLA_FFI_Buffer* y0 = frame->args.args[1];
  XLA_FFI_Buffer* y = frame->rets.rets[0];
  float a = *(const float*)alpha->value;
  for (int64_t i = 0; i < x->dims[0]; i++)
    ((float*)y->data)[i] = a * ((const float*)x->data)[i] + ((const float*)y0->data)[i];
  return NULL;
}

int main(void) {
  if (ccshim_register_handler("saxpy", "cpu", saxpy, 0) != CCSHIM_OK) {
    fprintf(stderr, "register: %s\n", ccshim_last_error());
    return 1;
  }
  ccshim_registration reg;
  ccshim_lookup("saxpy", "host", &reg);
  printf("registered saxpy for host; it reports FFI API %d.%d\n", reg.api_major, reg.api_minor);

  float x[4] = {1, 2, 3, 4}, y0[4] = {10, 20, 30, 40}, y[4] = {0};
  int64_t n = 4;
  float alpha = 0.5f;
  ccshim_context* ctx;
  ccshim_frame_builder* fb;
  if (ccshim_context_new(NULL, &ctx) || ccshim_frame_builder_new(&fb) ||
      ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, x, 1, &n) ||
      ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, y0, 1, &n) ||
      ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F32, y, 1, &n) ||
      ccshim_frame_builder_add_scalar(fb, "alpha", XLA_FFI_DataType_F32, &alpha)) {
    fprintf(stderr, "setup: %s\n", ccshim_last_error());
    return 1;
  }
  if (ccshim_invoke("saxpy", "cpu", ctx, XLA_FFI_ExecutionStage_EXECUTE, fb, NULL)) {
    fprintf(stderr, "invoke: %s\n", ccshim_last_error());
    return 1;
  }
  printf("saxpy(alpha=0.5, x=[1 2 3 4], y0=[10 20 30 40]) = [%g %g %g %g]\n", y[0], y[1], y[2],
         y[3]);
  ccshim_frame_builder_free(fb);
  ccshim_context_free(ctx);
  return y[3] == 42 ? 0 : 1;
}
