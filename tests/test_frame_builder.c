/*
 * The call-frame builder: buffers, attributes of every kind XLA delivers,
 * byte-wise sorted names at every level, and refusal of what XLA would never
 * send, each with a status and a message, leaving the builder as it was.
 */
#include <stdint.h>

#include "ccshim/runtime.h"
#include "check.h"

static const XLA_FFI_Attrs* dict_at(const XLA_FFI_Attrs* a, int64_t i) {
  CHECK_EQ(a->types[i], XLA_FFI_AttrType_DICTIONARY);
  return a->attrs[i];
}

static void check_name(const XLA_FFI_Attrs* a, int64_t i, const char* want) {
  const XLA_FFI_ByteSpan* n = a->names[i];
  CHECK_EQ(n->len, strlen(want));
  CHECK_MEM_EQ(n->ptr, want, n->len);
}

static void test_buffers(void) {
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  float x[6];
  int64_t dims[2] = {2, 3};
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, x, 2, dims));
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_TOKEN, NULL, 0, NULL));
  double y;
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F64, &y, 0, NULL));
  dims[0] = 99; /* the builder copied the dims */

  XLA_FFI_CallFrame f;
  ccshim_context* ctx;
  CHECK_OK(ccshim_context_new(NULL, &ctx));
  CHECK_OK(
      ccshim_frame_builder_build(fb, ccshim_ffi_api(), ctx, XLA_FFI_ExecutionStage_EXECUTE, &f));
  CHECK_EQ(f.struct_size, 168);
  CHECK(f.extension_start == NULL);
  CHECK_PTR_EQ(f.api, ccshim_ffi_api());
  CHECK_PTR_EQ(f.ctx, ctx);
  CHECK_EQ(f.stage, XLA_FFI_ExecutionStage_EXECUTE);
  CHECK(f.future == NULL);
  CHECK_EQ(f.args.struct_size, 40);
  CHECK_EQ(f.args.size, 2);
  CHECK_EQ(f.rets.size, 1);
  CHECK_EQ(f.attrs.struct_size, 48);
  CHECK_EQ(f.attrs.size, 0);
  const XLA_FFI_Buffer* b0 = f.args.args[0];
  CHECK_EQ(b0->struct_size, 48);
  CHECK_EQ(f.args.types[0], XLA_FFI_ArgType_BUFFER);
  CHECK_EQ(b0->dtype, XLA_FFI_DataType_F32);
  CHECK_PTR_EQ(b0->data, x);
  CHECK_EQ(b0->rank, 2);
  CHECK_EQ(b0->dims[0], 2);
  CHECK_EQ(b0->dims[1], 3);
  const XLA_FFI_Buffer* tok = f.args.args[1];
  CHECK_EQ(tok->dtype, XLA_FFI_DataType_TOKEN);
  CHECK(tok->data == NULL);
  CHECK_EQ(tok->rank, 0);
  const XLA_FFI_Buffer* r0 = f.rets.rets[0];
  CHECK_EQ(f.rets.types[0], XLA_FFI_RetType_BUFFER);
  CHECK_PTR_EQ(r0->data, &y);

  /* Reset keeps nothing of what was added. */
  ccshim_frame_builder_reset(fb);
  CHECK_OK(ccshim_frame_builder_build(fb, ccshim_ffi_api(), ctx, XLA_FFI_ExecutionStage_INSTANTIATE,
                                      &f));
  CHECK_EQ(f.args.size, 0);
  CHECK_EQ(f.rets.size, 0);
  CHECK_EQ(f.stage, XLA_FFI_ExecutionStage_INSTANTIATE);
  ccshim_frame_builder_free(fb);
  ccshim_context_free(ctx);
}

static void test_attributes(void) {
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  static const char blob[] = {'a', '\0', 'b', '\0', '\xff'};
  CHECK_OK(ccshim_frame_builder_add_string(fb, "opaque", blob, sizeof blob));
  /* Scalars of every accepted dtype. */
  const unsigned char yes = 1;
  const int8_t s8 = -8;
  const int16_t s16 = -16;
  const int32_t s32 = -32;
  const int64_t s64 = -64;
  const uint8_t u8 = 8;
  const uint16_t u16 = 16;
  const uint32_t u32 = 32;
  const uint64_t u64 = UINT64_MAX;
  const float f32 = 1.5f;
  const double f64 = -2.25;
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "s_pred", XLA_FFI_DataType_PRED, &yes));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "s_s8", XLA_FFI_DataType_S8, &s8));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "s_s16", XLA_FFI_DataType_S16, &s16));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "s_s32", XLA_FFI_DataType_S32, &s32));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "s_s64", XLA_FFI_DataType_S64, &s64));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "s_u8", XLA_FFI_DataType_U8, &u8));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "s_u16", XLA_FFI_DataType_U16, &u16));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "s_u32", XLA_FFI_DataType_U32, &u32));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "s_u64", XLA_FFI_DataType_U64, &u64));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "s_f32", XLA_FFI_DataType_F32, &f32));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "s_f64", XLA_FFI_DataType_F64, &f64));
  /* Arrays of every accepted element type. */
  const int64_t longs[3] = {1, -2, 3};
  const uint8_t bytes[4] = {0, 1, 0, 255};
  const double doubles[2] = {0.5, 1e300};
  const int8_t i8s[2] = {-1, 1};
  const int16_t i16s[2] = {-300, 300};
  const int32_t i32s[1] = {-70000};
  const uint16_t u16s[1] = {65535};
  const uint32_t u32s[1] = {4000000000u};
  const uint64_t u64s[1] = {1ull << 63};
  const float floats[2] = {0.25f, -0.5f};
  CHECK_OK(ccshim_frame_builder_add_array(fb, "a_s64", XLA_FFI_DataType_S64, longs, 3));
  CHECK_OK(ccshim_frame_builder_add_array(fb, "a_u8", XLA_FFI_DataType_U8, bytes, 4));
  CHECK_OK(ccshim_frame_builder_add_array(fb, "a_f64", XLA_FFI_DataType_F64, doubles, 2));
  CHECK_OK(ccshim_frame_builder_add_array(fb, "a_s8", XLA_FFI_DataType_S8, i8s, 2));
  CHECK_OK(ccshim_frame_builder_add_array(fb, "a_s16", XLA_FFI_DataType_S16, i16s, 2));
  CHECK_OK(ccshim_frame_builder_add_array(fb, "a_s32", XLA_FFI_DataType_S32, i32s, 1));
  CHECK_OK(ccshim_frame_builder_add_array(fb, "a_u16", XLA_FFI_DataType_U16, u16s, 1));
  CHECK_OK(ccshim_frame_builder_add_array(fb, "a_u32", XLA_FFI_DataType_U32, u32s, 1));
  CHECK_OK(ccshim_frame_builder_add_array(fb, "a_u64", XLA_FFI_DataType_U64, u64s, 1));
  CHECK_OK(ccshim_frame_builder_add_array(fb, "a_f32", XLA_FFI_DataType_F32, floats, 2));
  CHECK_OK(ccshim_frame_builder_add_array(fb, "a_empty", XLA_FFI_DataType_S32, NULL, 0));
  /* A nested dictionary, with names in need of sorting. */
  CHECK_OK(ccshim_frame_builder_begin_dict(fb, "dict"));
  CHECK_OK(ccshim_frame_builder_add_string(fb, "z", "last", 4));
  CHECK_OK(ccshim_frame_builder_add_string(fb, "\xc3\xa9t\xc3\xa9", "after z", 7));
  CHECK_OK(ccshim_frame_builder_begin_dict(fb, "inner"));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "s_s32", XLA_FFI_DataType_S32, &s32));
  CHECK_OK(ccshim_frame_builder_end_dict(fb));
  CHECK_OK(ccshim_frame_builder_add_string(fb, "Z", "upper first", 11));
  CHECK_OK(ccshim_frame_builder_add_string(fb, "", "empty name", 10));
  CHECK_OK(ccshim_frame_builder_end_dict(fb));
  CHECK_OK(ccshim_frame_builder_add_string(fb, "a", "short first", 11));

  XLA_FFI_CallFrame f;
  CHECK_OK(
      ccshim_frame_builder_build(fb, ccshim_ffi_api(), NULL, XLA_FFI_ExecutionStage_EXECUTE, &f));
  const XLA_FFI_Attrs* a = &f.attrs;
  CHECK_EQ(a->size, 25);
  /* std::string order: byte-wise, shorter first on a common prefix. */
  const char* order[] = {"a",     "a_empty", "a_f32",  "a_f64", "a_s16", "a_s32", "a_s64",
                         "a_s8",  "a_u16",   "a_u32",  "a_u64", "a_u8",  "dict",  "opaque",
                         "s_f32", "s_f64",   "s_pred", "s_s16", "s_s32", "s_s64", "s_s8",
                         "s_u16", "s_u32",   "s_u64",  "s_u8"};
  for (int i = 0; i < 25; i++) check_name(a, i, order[i]);

  const XLA_FFI_ByteSpan* op = a->attrs[13];
  CHECK_EQ(a->types[13], XLA_FFI_AttrType_STRING);
  CHECK_EQ(op->len, sizeof blob);
  CHECK_MEM_EQ(op->ptr, blob, sizeof blob);

  const XLA_FFI_Scalar* sc = a->attrs[23];
  CHECK_EQ(a->types[23], XLA_FFI_AttrType_SCALAR);
  CHECK_EQ(sc->dtype, XLA_FFI_DataType_U64);
  CHECK(*(const uint64_t*)sc->value == UINT64_MAX);
  sc = a->attrs[16];
  CHECK_EQ(sc->dtype, XLA_FFI_DataType_PRED);
  CHECK_EQ(*(const unsigned char*)sc->value, 1);
  sc = a->attrs[15];
  CHECK(*(const double*)sc->value == -2.25);
  sc = a->attrs[14];
  CHECK(*(const float*)sc->value == 1.5f);
  sc = a->attrs[20];
  CHECK_EQ(*(const int8_t*)sc->value, -8);

  const XLA_FFI_Array* arr = a->attrs[6];
  CHECK_EQ(a->types[6], XLA_FFI_AttrType_ARRAY);
  CHECK_EQ(arr->dtype, XLA_FFI_DataType_S64);
  CHECK_EQ(arr->size, 3);
  CHECK_MEM_EQ(arr->data, longs, sizeof longs);
  arr = a->attrs[3];
  CHECK_MEM_EQ(arr->data, doubles, sizeof doubles);
  arr = a->attrs[1];
  CHECK_EQ(arr->size, 0);

  const XLA_FFI_Attrs* d = dict_at(a, 12);
  CHECK_EQ(d->struct_size, 48);
  CHECK_EQ(d->size, 5);
  check_name(d, 0, "");
  check_name(d, 1, "Z");
  check_name(d, 2, "inner");
  check_name(d, 3, "z");
  check_name(d, 4, "\xc3\xa9t\xc3\xa9"); /* 0xc3 sorts after 'z' */
  const XLA_FFI_Attrs* inner = dict_at(d, 2);
  CHECK_EQ(inner->size, 1);
  CHECK_EQ(*(const int32_t*)((const XLA_FFI_Scalar*)inner->attrs[0])->value, -32);
  ccshim_frame_builder_free(fb);
}

static void test_refusals(void) {
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  float x;
  int64_t neg[1] = {-1};
  int64_t huge[2] = {INT64_MAX / 2, 4};
  int64_t dims65[65] = {0};
  CHECK_STATUS(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, &x, 1, neg), CCSHIM_EINVAL);
  CHECK_CONTAINS(ccshim_last_error(), "dimension 0 is -1");
  CHECK_STATUS(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, &x, 65, dims65),
               CCSHIM_EOVERFLOW);
  CHECK_CONTAINS(ccshim_last_error(), "rank 65 is out of range");
  CHECK_STATUS(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, &x, -1, NULL),
               CCSHIM_EOVERFLOW);
  CHECK_STATUS(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, &x, 2, NULL), CCSHIM_EINVAL);
  CHECK_STATUS(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, &x, 2, huge),
               CCSHIM_EOVERFLOW);
  CHECK_STATUS(ccshim_frame_builder_add_ret(fb, (XLA_FFI_DataType)13, &x, 0, NULL), CCSHIM_EINVAL);
  CHECK_CONTAINS(ccshim_last_error(), "dtype 13 is not an XLA FFI data type");
  CHECK_STATUS(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_TOKEN, &x, 0, NULL),
               CCSHIM_EINVAL);
  CHECK_STATUS(ccshim_frame_builder_add_string(fb, NULL, "x", 1), CCSHIM_EINVAL);
  CHECK_CONTAINS(ccshim_last_error(), "attribute name is NULL");
  CHECK_STATUS(ccshim_frame_builder_add_string(fb, "s", NULL, 3), CCSHIM_EINVAL);
  CHECK_OK(ccshim_frame_builder_add_string(fb, "dup", "1", 1));
  CHECK_STATUS(ccshim_frame_builder_add_string(fb, "dup", "2", 1), CCSHIM_EEXIST);
  CHECK_CONTAINS(ccshim_last_error(), "'dup' is already set");
  uint16_t half = 0x3c00;
  CHECK_STATUS(ccshim_frame_builder_add_scalar(fb, "h", XLA_FFI_DataType_F16, &half),
               CCSHIM_EINVAL);
  CHECK_CONTAINS(ccshim_last_error(), "dtype f16 is not one XLA delivers");
  CHECK_STATUS(ccshim_frame_builder_add_scalar(fb, "v", XLA_FFI_DataType_S32, NULL), CCSHIM_EINVAL);
  unsigned char flags[2] = {1, 0};
  CHECK_STATUS(ccshim_frame_builder_add_array(fb, "b", XLA_FFI_DataType_PRED, flags, 2),
               CCSHIM_EINVAL);
  CHECK_STATUS(ccshim_frame_builder_add_array(fb, "n", XLA_FFI_DataType_S32, NULL, 2),
               CCSHIM_EINVAL);
  CHECK_STATUS(ccshim_frame_builder_add_array(fb, "o", XLA_FFI_DataType_S64, flags, SIZE_MAX / 4),
               CCSHIM_EOVERFLOW);
  CHECK_STATUS(ccshim_frame_builder_end_dict(fb), CCSHIM_EINVAL);
  /* The same name is fine one level down. */
  CHECK_OK(ccshim_frame_builder_begin_dict(fb, "d"));
  CHECK_OK(ccshim_frame_builder_add_string(fb, "dup", "3", 1));
  XLA_FFI_CallFrame f;
  CHECK_STATUS(ccshim_frame_builder_build(fb, NULL, NULL, XLA_FFI_ExecutionStage_EXECUTE, &f),
               CCSHIM_EINVAL);
  CHECK_CONTAINS(ccshim_last_error(), "still open");
  CHECK_OK(ccshim_frame_builder_end_dict(fb));
  CHECK_STATUS(ccshim_frame_builder_build(fb, NULL, NULL, (XLA_FFI_ExecutionStage)7, &f),
               CCSHIM_EINVAL);
  for (int i = 0; i < CCSHIM_FRAME_MAX_DICT_DEPTH; i++) {
    char name[8];
    snprintf(name, sizeof name, "d%d", i);
    CHECK_OK(ccshim_frame_builder_begin_dict(fb, name));
  }
  CHECK_STATUS(ccshim_frame_builder_begin_dict(fb, "deep"), CCSHIM_EOVERFLOW);
  for (int i = 0; i < CCSHIM_FRAME_MAX_DICT_DEPTH; i++) CHECK_OK(ccshim_frame_builder_end_dict(fb));

  /* Nothing refused was kept: "dup", "d" and "d0" at the top, no buffers. */
  CHECK_OK(ccshim_frame_builder_build(fb, NULL, NULL, XLA_FFI_ExecutionStage_EXECUTE, &f));
  CHECK_EQ(f.args.size, 0);
  CHECK_EQ(f.rets.size, 0);
  CHECK_EQ(f.attrs.size, 3);
  CHECK_STATUS(ccshim_frame_builder_new(NULL), CCSHIM_EINVAL);
  CHECK_STATUS(ccshim_frame_builder_add_arg(NULL, XLA_FFI_DataType_F32, &x, 0, NULL),
               CCSHIM_EINVAL);
  ccshim_frame_builder_free(fb);
  ccshim_frame_builder_free(NULL);
}

int main(void) {
  test_buffers();
  test_attributes();
  test_refusals();
  printf("frame builder: ok\n");
  return 0;
}
