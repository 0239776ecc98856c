/*
 * Handlers written with XLA's own C++ bindings (jaxlib's xla/ffi/api/ffi.h),
 * compiled unchanged, registered and run in ccshim's embedded runtime:
 * buffers, every attribute kind, a dictionary, a decoded enum and struct,
 * an error return, remaining arguments, the platform stream and State.
 */
#include <stdint.h>

#include "ccshim/runtime.h"
#include "check.h"
#include "handlers/upstream_handlers.h"

static ccshim_context* host;

static void test_metadata_and_registration(void) {
  XLA_FFI_Metadata md;
  CHECK_OK(ccshim_query_metadata(up_scale, &md));
  CHECK_EQ(md.api_version.major_version, 0);
  CHECK_EQ(md.api_version.minor_version, up_api_minor());
  CHECK_EQ(md.traits, 0);
  CHECK_OK(ccshim_register_handler("up.scale", "cpu", up_scale, 0));
  ccshim_registration r;
  CHECK_OK(ccshim_lookup("up.scale", "host", &r));
  CHECK_EQ(r.api_minor, up_api_minor());
  printf("upstream bindings report FFI 0.%d; registered\n", up_api_minor());
}

static void test_scale(void) {
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {0};
  int64_t dims[2] = {2, 3};
  float factor = -0.5f;
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, x, 2, dims));
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F32, y, 2, dims));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "factor", XLA_FFI_DataType_F32, &factor));
  CHECK_OK(ccshim_invoke("up.scale", "cpu", host, XLA_FFI_ExecutionStage_EXECUTE, fb, NULL));
  for (int i = 0; i < 6; i++) CHECK(y[i] == x[i] * -0.5f);

  /* The bindings refuse a frame whose struct_size is not exactly 168. */
  XLA_FFI_CallFrame f;
  CHECK_OK(
      ccshim_frame_builder_build(fb, ccshim_ffi_api(), host, XLA_FFI_ExecutionStage_EXECUTE, &f));
  f.struct_size = 176;
  XLA_FFI_Error* err = NULL;
  CHECK_STATUS(ccshim_call_frame(up_scale, &f, &err), CCSHIM_EHANDLER);
  CHECK_CONTAINS(ccshim_error_message(err), "XLA_FFI_CallFrame");
  ccshim_error_free(err);

  /* A wrong attribute type is the bindings' error, passed through. */
  ccshim_frame_builder_reset(fb);
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, x, 2, dims));
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F32, y, 2, dims));
  double wrong = 2.0;
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "factor", XLA_FFI_DataType_F64, &wrong));
  CHECK_STATUS(ccshim_invoke("up.scale", "cpu", host, XLA_FFI_ExecutionStage_EXECUTE, fb, &err),
               CCSHIM_EHANDLER);
  CHECK_EQ(ccshim_error_code(err), XLA_FFI_Error_Code_INVALID_ARGUMENT);
  ccshim_error_free(err);
  ccshim_frame_builder_free(fb);
}

static void add_all_attrs(ccshim_frame_builder* fb, int with_range) {
  const unsigned char b = 1;
  const int8_t i8 = -8;
  const int16_t i16 = -1600;
  const int32_t i32 = -320000;
  const int64_t i64 = -64000000000ll;
  const uint8_t u8 = 200;
  const uint16_t u16 = 60000;
  const uint32_t u32 = 4000000000u;
  const uint64_t u64 = 1ull << 40;
  const float f32 = 0.75f;
  const double f64 = -1e100;
  static const char str[] = {'o', '\0', 'p', '\0', 'q', (char)0xfe};
  const int64_t arr[4] = {10, 20, 30, -5};
  const int32_t color = 3, inner = 99;
  const int64_t lo = -7, hi = 7;
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "b", XLA_FFI_DataType_PRED, &b));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "i8", XLA_FFI_DataType_S8, &i8));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "i16", XLA_FFI_DataType_S16, &i16));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "i32", XLA_FFI_DataType_S32, &i32));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "i64", XLA_FFI_DataType_S64, &i64));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "u8", XLA_FFI_DataType_U8, &u8));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "u16", XLA_FFI_DataType_U16, &u16));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "u32", XLA_FFI_DataType_U32, &u32));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "u64", XLA_FFI_DataType_U64, &u64));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "f32", XLA_FFI_DataType_F32, &f32));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "f64", XLA_FFI_DataType_F64, &f64));
  CHECK_OK(ccshim_frame_builder_add_string(fb, "str", str, sizeof str));
  CHECK_OK(ccshim_frame_builder_add_array(fb, "arr", XLA_FFI_DataType_S64, arr, 4));
  CHECK_OK(ccshim_frame_builder_begin_dict(fb, "dict"));
  CHECK_OK(ccshim_frame_builder_add_string(fb, "inner_str", "hello", 5));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "inner_i32", XLA_FFI_DataType_S32, &inner));
  CHECK_OK(ccshim_frame_builder_end_dict(fb));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "color", XLA_FFI_DataType_S32, &color));
  if (with_range) {
    CHECK_OK(ccshim_frame_builder_begin_dict(fb, "range"));
    CHECK_OK(ccshim_frame_builder_add_scalar(fb, "hi", XLA_FFI_DataType_S64, &hi));
    CHECK_OK(ccshim_frame_builder_add_scalar(fb, "lo", XLA_FFI_DataType_S64, &lo));
    CHECK_OK(ccshim_frame_builder_end_dict(fb));
  }
}

static void test_attributes(void) {
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  double out[24] = {0};
  int64_t n = 24;
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F64, out, 1, &n));
  add_all_attrs(fb, 1);
  CHECK_OK(ccshim_invoke_handler(up_attrs, host, XLA_FFI_ExecutionStage_EXECUTE, fb, NULL));
  const double want[24] = {1,
                           -8,
                           -1600,
                           -320000,
                           -64000000000.0,
                           200,
                           60000,
                           4000000000.0,
                           1099511627776.0,
                           0.75,
                           -1e100,
                           6,
                           2,
                           4,
                           55,
                           99,
                           5,
                           2,
                           3,
                           -7,
                           7,
                           'o',
                           0xfe,
                           1};
  for (int i = 0; i < 24; i++) {
    if (out[i] != want[i]) CHECK_FAIL_("attrs slot %d: got %g, want %g", i, out[i], want[i]);
  }

  /* One attribute missing: the bindings' own count check answers. */
  ccshim_frame_builder_reset(fb);
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F64, out, 1, &n));
  add_all_attrs(fb, 0);
  XLA_FFI_Error* err = NULL;
  CHECK_STATUS(ccshim_invoke_handler(up_attrs, host, XLA_FFI_ExecutionStage_EXECUTE, fb, &err),
               CCSHIM_EHANDLER);
  CHECK_CONTAINS(ccshim_error_message(err), "Wrong number of attributes");
  ccshim_error_free(err);
  ccshim_frame_builder_free(fb);
}

static void test_fail_remaining_stream(void) {
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  int64_t code = XLA_FFI_Error_Code_RESOURCE_EXHAUSTED;
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "code", XLA_FFI_DataType_S64, &code));
  XLA_FFI_Error* err = NULL;
  CHECK_STATUS(ccshim_invoke_handler(up_fail, host, XLA_FFI_ExecutionStage_EXECUTE, fb, &err),
               CCSHIM_EHANDLER);
  CHECK_EQ(ccshim_error_code(err), XLA_FFI_Error_Code_RESOURCE_EXHAUSTED);
  CHECK_STR_EQ(ccshim_error_message(err), "upstream handler failed");
  ccshim_error_free(err);

  ccshim_frame_builder_reset(fb);
  float a[3] = {1, 2, 3}, b[2] = {10, 20};
  int64_t d3 = 3, d2 = 2;
  double sum = 0;
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, a, 1, &d3));
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_TOKEN, NULL, 0, NULL));
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, b, 1, &d2));
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F64, &sum, 0, NULL));
  CHECK_OK(ccshim_invoke_handler(up_sum_all, host, XLA_FFI_ExecutionStage_EXECUTE, fb, NULL));
  CHECK(sum == 36.0);

  ccshim_context* gpu;
  ccshim_context_options o = CCSHIM_CONTEXT_OPTIONS_INIT;
  o.platform = "cuda";
  CHECK_OK(ccshim_context_new(&o, &gpu));
  ccshim_frame_builder_reset(fb);
  uint64_t stream = 0;
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_U64, &stream, 0, NULL));
  CHECK_OK(ccshim_invoke_handler(up_stream, gpu, XLA_FFI_ExecutionStage_EXECUTE, fb, NULL));
  CHECK_EQ(stream, (uintptr_t)ccshim_context_stream(gpu));
  CHECK_STATUS(ccshim_invoke_handler(up_stream, host, XLA_FFI_ExecutionStage_EXECUTE, fb, &err),
               CCSHIM_EHANDLER);
  CHECK_CONTAINS(ccshim_error_message(err), "GPU context is not available");
  ccshim_error_free(err);
  ccshim_context_free(gpu);
  ccshim_frame_builder_free(fb);
}

static void test_state(void) {
  XLA_FFI_Error* err = up_register_types(ccshim_ffi_api());
  CHECK(err == NULL);
  XLA_FFI_Handler_Bundle bundle = {up_counter_instantiate, NULL, NULL, up_counter_execute, NULL};
  CHECK_OK(ccshim_register("up.counter", "cpu", &bundle, 0));
  ccshim_context* site;
  CHECK_OK(ccshim_context_new(NULL, &site));
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  int32_t start = 10;
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "start", XLA_FFI_DataType_S32, &start));
  CHECK_OK(ccshim_invoke("up.counter", "cpu", site, XLA_FFI_ExecutionStage_INSTANTIATE, fb, NULL));
  ccshim_frame_builder_reset(fb);
  int32_t out = 0;
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_S32, &out, 0, NULL));
  CHECK_OK(ccshim_invoke("up.counter", "cpu", site, XLA_FFI_ExecutionStage_EXECUTE, fb, NULL));
  CHECK_EQ(out, 11);
  CHECK_OK(ccshim_invoke("up.counter", "cpu", site, XLA_FFI_ExecutionStage_EXECUTE, fb, NULL));
  CHECK_EQ(out, 12);
  /* The bindings refuse to run their execute handler at another stage. */
  CHECK_STATUS(
      ccshim_invoke_handler(up_counter_execute, site, XLA_FFI_ExecutionStage_PREPARE, fb, &err),
      CCSHIM_EHANDLER);
  CHECK_CONTAINS(ccshim_error_message(err), "Wrong execution stage");
  ccshim_error_free(err);
  ccshim_frame_builder_free(fb);
  ccshim_context_free(site); /* deletes the Counter through its TypeInfo */
}

int main(void) {
  CHECK_OK(ccshim_context_new(NULL, &host));
  test_metadata_and_registration();
  test_scale();
  test_attributes();
  test_fail_remaining_stream();
  test_state();
  ccshim_context_free(host);
  printf("upstream C++ handlers in the embedded runtime: ok\n");
  return 0;
}
