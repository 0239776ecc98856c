/*
 * Shape-polymorphic signatures (ccshim/signature.h): one adapter serves
 * every shape, and every call is still checked.  Named dims shared across
 * buffers, dims tied to the value of a scalar size operand (the jaxlib
 * style: a lying size is refused with both numbers and the kernel does not
 * run), `[...]` for a buffer whose shape the kernel reads from elsewhere,
 * and what the GPU forms cannot do.
 */
#include <string.h>

#include "adapter_util.h"

static int calls;

/* (f32[n,m], f32[m]) -> f32[n]: y = A x, sizes from the buffers' dims as
 * the adapter checked them (the kernel itself trusts a global). */
static int64_t rows, cols;
static void matvec_v1(void* out, const void** in) {
  calls++;
  const float* a = in[0];
  const float* x = in[1];
  float* y = out;
  for (int64_t i = 0; i < rows; i++) {
    y[i] = 0;
    for (int64_t j = 0; j < cols; j++) y[i] += a[i * cols + j] * x[j];
  }
}

/* (m: s32[], x: f32[m]) -> f32[m]: jaxlib style, the size from operand 0. */
static void double_v1(void* out, const void** in) {
  calls++;
  int32_t m = *(const int32_t*)in[0];
  for (int32_t i = 0; i < m; i++) ((float*)out)[i] = 2 * ((const float*)in[1])[i];
}

static void add_arg(ccshim_frame_builder* fb, XLA_FFI_DataType t, void* data, int64_t rank,
                    const int64_t* dims) {
  CHECK_OK(ccshim_frame_builder_add_arg(fb, t, data, rank, dims));
}

/* Adds the f32[n] result, calls the adapter on the frame, frees the builder. */
static XLA_FFI_Error* call_with_result(ccshim_adapter* a, ccshim_context* ctx,
                                       ccshim_frame_builder* fb, float* out, int64_t n) {
  int64_t dims[1] = {n};
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F32, out, 1, dims));
  XLA_FFI_Error* err = call_adapter(a, fb, ctx);
  ccshim_frame_builder_free(fb);
  return err;
}

static XLA_FFI_Error* call_matvec(ccshim_adapter* a, ccshim_context* ctx, int64_t n, int64_t m,
                                  int64_t xm, int64_t yn, float* out) {
  static float A[64], x[64];
  for (int i = 0; i < 64; i++) A[i] = (float)i, x[i] = 1.0f;
  rows = n, cols = m;
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  int64_t ad[2] = {n, m}, xd[1] = {xm};
  add_arg(fb, XLA_FFI_DataType_F32, A, 2, ad);
  add_arg(fb, XLA_FFI_DataType_F32, x, 1, xd);
  return call_with_result(a, ctx, fb, out, yn);
}

static void named_dims(ccshim_context* ctx) {
  ccshim_adapter* a;
  CHECK_OK(ccshim_wrap((ccshim_legacy_fn)matvec_v1, 1, CCSHIM_PLATFORM_HOST,
                       "(f32[n,m], f32[m]) -> f32[n]", NULL, &a));
  float y[8];
  /* One registration, every shape. */
  CHECK(call_matvec(a, ctx, 3, 4, 4, 3, y) == NULL);
  CHECK(y[0] == 0 + 1 + 2 + 3 && y[2] == 8 + 9 + 10 + 11);
  CHECK(call_matvec(a, ctx, 2, 5, 5, 2, y) == NULL);
  CHECK(y[1] == 5 + 6 + 7 + 8 + 9);
  CHECK_EQ(calls, 2);
  /* A mismatch names both numbers and where each came from. */
  expect_ffi_error(call_matvec(a, ctx, 3, 4, 5, 3, y), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "arg 1: dim 0 is 5, but m is 4 (dim 1 of arg 0)");
  expect_ffi_error(call_matvec(a, ctx, 3, 4, 4, 4, y), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "ret 0: dim 0 is 4, but n is 3 (dim 0 of arg 0)");
  CHECK_EQ(calls, 2);
  CHECK_OK(ccshim_adapter_free(a));
}

static XLA_FFI_Error* call_double(ccshim_adapter* a, ccshim_context* ctx, XLA_FFI_DataType t,
                                  void* m, int64_t xm, int64_t ym, float* out) {
  static float x[16];
  for (int i = 0; i < 16; i++) x[i] = (float)i;
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  int64_t xd[1] = {xm};
  add_arg(fb, t, m, 0, NULL);
  add_arg(fb, XLA_FFI_DataType_F32, x, 1, xd);
  return call_with_result(a, ctx, fb, out, ym);
}

static void size_operands(ccshim_context* ctx) {
  ccshim_adapter* a;
  CHECK_OK(ccshim_wrap((ccshim_legacy_fn)double_v1, 1, CCSHIM_PLATFORM_HOST,
                       "(m: s32[], x: f32[m]) -> f32[m]", NULL, &a));
  float y[16];
  int32_t m = 4;
  calls = 0;
  CHECK(call_double(a, ctx, XLA_FFI_DataType_S32, &m, 4, 4, y) == NULL);
  CHECK(y[3] == 6.0f && calls == 1);
  /* The size operand lies: 12 against a 4-element buffer.  Without the
   * signature the kernel would write 12 floats into a 4-float result. */
  m = 12;
  expect_ffi_error(call_double(a, ctx, XLA_FFI_DataType_S32, &m, 4, 4, y),
                   XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "arg 1: dim 0 is 4, but m is 12 (the value of arg 0): the size operand and "
                   "the buffer disagree");
  m = -1;
  expect_ffi_error(call_double(a, ctx, XLA_FFI_DataType_S32, &m, 4, 4, y),
                   XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "arg 0: m is -1; a dimension size cannot be negative");
  int64_t wide = 4;
  expect_ffi_error(call_double(a, ctx, XLA_FFI_DataType_S64, &wide, 4, 4, y),
                   XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "arg 0: expected s32[] (the value of m), got s64[]");
  CHECK_EQ(calls, 1);
  CHECK_OK(ccshim_adapter_free(a));
  /* Unsigned and narrow size operands are read as what they are. */
  CHECK_OK(ccshim_wrap((ccshim_legacy_fn)double_v1, 1, CCSHIM_PLATFORM_HOST,
                       "(m: u8[], x: f32[m]) -> f32[m]", NULL, &a));
  uint8_t small = 200;
  expect_ffi_error(call_double(a, ctx, XLA_FFI_DataType_U8, &small, 4, 4, y),
                   XLA_FFI_Error_Code_INVALID_ARGUMENT, "but m is 200 (the value of arg 0)");
  CHECK_OK(ccshim_adapter_free(a));
}

static void any_dims(ccshim_context* ctx) {
  ccshim_adapter* a;
  CHECK_OK(ccshim_wrap((ccshim_legacy_fn)double_v1, 1, CCSHIM_PLATFORM_HOST,
                       "(s32[], f32[...]) -> f32[...]", NULL, &a));
  float y[16];
  int32_t m = 6;
  calls = 0;
  CHECK(call_double(a, ctx, XLA_FFI_DataType_S32, &m, 6, 6, y) == NULL);
  CHECK(y[5] == 10.0f && calls == 1);
  expect_ffi_error(call_double(a, ctx, XLA_FFI_DataType_U32, &m, 6, 6, y),
                   XLA_FFI_Error_Code_INVALID_ARGUMENT, "arg 0: expected s32[], got u32[]");
  CHECK_OK(ccshim_adapter_free(a));
}

/* (b: s32[], n: s32[], x: f32[...b, n]) -> f32[...b]: the jaxlib style of
 * a batch, the batch size an operand and the rows any leading dims. */
static void rowsum_v1(void* out, const void** in) {
  calls++;
  int32_t b = *(const int32_t*)in[0], n = *(const int32_t*)in[1];
  for (int32_t r = 0; r < b; r++) {
    float sum = 0;
    for (int32_t j = 0; j < n; j++) sum += ((const float*)in[2])[r * n + j];
    ((float*)out)[r] = sum;
  }
}

static XLA_FFI_Error* call_rowsum(ccshim_adapter* a, ccshim_context* ctx, int32_t b, int32_t n,
                                  int64_t xrank, const int64_t* xdims, int64_t yrank,
                                  const int64_t* ydims, float* y) {
  static float x[64];
  for (int i = 0; i < 64; i++) x[i] = (float)i;
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  add_arg(fb, XLA_FFI_DataType_S32, &b, 0, NULL);
  add_arg(fb, XLA_FFI_DataType_S32, &n, 0, NULL);
  add_arg(fb, XLA_FFI_DataType_F32, x, xrank, xdims);
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F32, y, yrank, ydims));
  XLA_FFI_Error* err = call_adapter(a, fb, ctx);
  ccshim_frame_builder_free(fb);
  return err;
}

static void leading_dims(ccshim_context* ctx) {
  ccshim_adapter* a;
  CHECK_OK(ccshim_wrap((ccshim_legacy_fn)rowsum_v1, 1, CCSHIM_PLATFORM_HOST,
                       "(b: s32[], n: s32[], x: f32[...b, n]) -> f32[...b]", NULL, &a));
  float y[16];
  calls = 0;
  /* No leading dims (b = 1, the empty product), one, two. */
  int64_t x1[1] = {3}, x2[2] = {2, 3}, x3[3] = {2, 2, 3}, y1[1] = {2}, y2[2] = {2, 2};
  CHECK(call_rowsum(a, ctx, 1, 3, 1, x1, 0, NULL, y) == NULL && y[0] == 0 + 1 + 2);
  CHECK(call_rowsum(a, ctx, 2, 3, 2, x2, 1, y1, y) == NULL && y[1] == 3 + 4 + 5);
  CHECK(call_rowsum(a, ctx, 4, 3, 3, x3, 2, y2, y) == NULL && y[3] == 9 + 10 + 11);
  CHECK_EQ(calls, 3);
  /* A lying batch size, a lying row length, and buffers that disagree. */
  expect_ffi_error(call_rowsum(a, ctx, 3, 3, 2, x2, 1, y1, y), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "arg 2: has 2 in its 1 leading dim(s), but b is 3 (the value of arg 0)");
  expect_ffi_error(call_rowsum(a, ctx, 4, 3, 3, x3, 0, NULL, y),
                   XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "ret 0: has 1 elements, but b is 4 (the value of arg 0)");
  expect_ffi_error(call_rowsum(a, ctx, 2, 4, 2, x2, 1, y1, y), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "arg 2: dim 1 is 3, but n is 4 (the value of arg 1)");
  expect_ffi_error(call_rowsum(a, ctx, 1, 3, 0, NULL, 0, NULL, y),
                   XLA_FFI_Error_Code_INVALID_ARGUMENT, "arg 2: expected f32[...b,n], got f32[]");
  CHECK_EQ(calls, 3);
  CHECK_OK(ccshim_adapter_free(a));
}

static void gpu_forms(void) {
  ccshim_adapter* a = (ccshim_adapter*)1;
  CHECK_STATUS(ccshim_wrap((ccshim_legacy_fn)double_v1, 2, CCSHIM_PLATFORM_CUDA,
                           "(m: s32[], x: f32[m]) -> f32[m]", NULL, &a),
               CCSHIM_EUNSUPPORTED);
  CHECK(a == NULL);
  CHECK_CONTAINS(ccshim_last_error(),
                 "dimension 'm' is the value of operand leaf 0, which on a GPU lives in device "
                 "memory");
  /* Names alone only compare dims: fine on a GPU. */
  CHECK_OK(ccshim_wrap((ccshim_legacy_fn)double_v1, 2, CCSHIM_PLATFORM_CUDA,
                       "(f32[n], f32[n]) -> f32[n]", NULL, &a));
  CHECK_OK(ccshim_adapter_free(a));
}

int main(void) {
  ccshim_context* ctx;
  CHECK_OK(ccshim_context_new(NULL, &ctx));
  named_dims(ctx);
  size_operands(ctx);
  any_dims(ctx);
  leading_dims(ctx);
  gpu_forms();
  ccshim_context_free(ctx);
  printf("polymorphic signatures: named dims, size operands, [...], leading dims, GPU refusals\n");
  return 0;
}
