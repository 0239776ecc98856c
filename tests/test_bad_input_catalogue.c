/*
 * The bad-input catalogue: one table of malformed inputs across every layer
 * (signatures, wrapping, the frame builder, call frames fed to adapters, the
 * runtime's API table, the registries, the legacy invoker), each with the
 * error code it must get and a fragment of the message, which must say what
 * was expected and what came.  Prints the number of cases.
 */
#include <stdint.h>

#include "adapter_util.h"

/* What one case produced: a code name ("CCSHIM_EINVAL", "INVALID_ARGUMENT")
 * and a message. */
typedef struct outcome {
  char code[32];
  char message[512];
} outcome;

typedef void (*case_fn)(outcome* out);

typedef struct bad_case {
  const char* name;
  case_fn run;
  const char* code;
  const char* fragment;
} bad_case;

static void from_status(outcome* out, ccshim_status st) {
  snprintf(out->code, sizeof out->code, "%s", ccshim_status_name(st));
  snprintf(out->message, sizeof out->message, "%s", ccshim_last_error());
}

static void from_error(outcome* out, XLA_FFI_Error* err) {
  snprintf(out->code, sizeof out->code, "%s",
           err ? ccshim_error_code_name(ccshim_error_code(err)) : "OK");
  snprintf(out->message, sizeof out->message, "%s", err ? ccshim_error_message(err) : "");
  ccshim_error_free(err);
}

/* --- Signatures --------------------------------------------------------------- */

static void sig(outcome* out, const char* text) {
  ccshim_signature* s = NULL;
  from_status(out, ccshim_signature_parse(text, &s));
  ccshim_signature_free(s);
}
static void sig_unclosed(outcome* o) { sig(o, "(f32[128], f32[2048) -> f32[2048]"); }
static void sig_no_arrow(outcome* o) { sig(o, "(f32[4]) f32[4]"); }
static void sig_dtype(outcome* o) { sig(o, "(float32[4]) -> f32[4]"); }
static void sig_dynamic(outcome* o) { sig(o, "(f32[?]) -> f32[4]"); }
static void sig_trailing(outcome* o) { sig(o, "(f32[4]) -> f32[4];"); }
static void sig_binary(outcome* o) { sig(o, "(f32[4]) -> \xff"); }
static void sig_overflow(outcome* o) { sig(o, "(f32[99999999999999999999]) -> f32[1]"); }

/* --- Wrapping ------------------------------------------------------------------ */

static void kernel_v1(void* out, const void** in) {
  (void)out;
  (void)in;
}
static void kernel_v2(void* out, const void** in, XlaCustomCallStatus* s) {
  *(float*)out = *(const float*)in[0];
  (void)s;
}

static void wrap_version(outcome* o) {
  ccshim_adapter* a = NULL;
  from_status(o, ccshim_wrap((ccshim_legacy_fn)kernel_v1, 4, CCSHIM_PLATFORM_HOST, NULL, NULL, &a));
}
static void wrap_null(outcome* o) {
  ccshim_adapter* a = NULL;
  from_status(o, ccshim_wrap(NULL, 1, CCSHIM_PLATFORM_HOST, NULL, NULL, &a));
}
static void wrap_badsig(outcome* o) {
  ccshim_adapter* a = NULL;
  from_status(o, ccshim_wrap((ccshim_legacy_fn)kernel_v1, 1, CCSHIM_PLATFORM_HOST,
                             "(f32[4) -> f32[4]", NULL, &a));
}
static void wrap_nested_gpu(outcome* o) {
  ccshim_wrap_options w = CCSHIM_WRAP_OPTIONS_INIT;
  w.tuple_operands = CCSHIM_TUPLES_NESTED;
  ccshim_adapter* a = NULL;
  from_status(o, ccshim_wrap((ccshim_legacy_fn)kernel_v1, 1, CCSHIM_PLATFORM_CUDA,
                             "((f32[1])) -> f32[1]", &w, &a));
}
static void wrap_unknown_target(outcome* o) {
  ccshim_adapter* a = NULL;
  from_status(o, ccshim_wrap_registered("no_such_kernel", "Host", 2, NULL, NULL, &a));
}
static void wrap_platform(outcome* o) {
  ccshim_adapter* a = NULL;
  from_status(o, ccshim_wrap_registered("k", "TPU", 2, NULL, NULL, &a));
}

/* --- The frame builder ------------------------------------------------------------ */

static void builder(outcome* o, int which) {
  ccshim_frame_builder* fb;
  ccshim_frame_builder_new(&fb);
  float x;
  int64_t neg = -3, dims65[65] = {0};
  uint16_t h = 0;
  ccshim_status st = CCSHIM_OK;
  switch (which) {
    case 0: st = ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, &x, 1, &neg); break;
    case 1: st = ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, &x, 65, dims65); break;
    case 2: st = ccshim_frame_builder_add_arg(fb, (XLA_FFI_DataType)14, &x, 0, NULL); break;
    case 3: st = ccshim_frame_builder_add_string(fb, NULL, "v", 1); break;
    case 4:
      ccshim_frame_builder_add_string(fb, "a", "v", 1);
      st = ccshim_frame_builder_add_string(fb, "a", "w", 1);
      break;
    case 5: st = ccshim_frame_builder_add_scalar(fb, "h", XLA_FFI_DataType_F16, &h); break;
    case 6: st = ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_TOKEN, &x, 0, NULL); break;
    case 7: {
      XLA_FFI_CallFrame f;
      ccshim_frame_builder_begin_dict(fb, "d");
      st = ccshim_frame_builder_build(fb, NULL, NULL, XLA_FFI_ExecutionStage_EXECUTE, &f);
      break;
    }
  }
  from_status(o, st);
  ccshim_frame_builder_free(fb);
}
static void fb_negative_dim(outcome* o) { builder(o, 0); }
static void fb_rank(outcome* o) { builder(o, 1); }
static void fb_dtype(outcome* o) { builder(o, 2); }
static void fb_null_name(outcome* o) { builder(o, 3); }
static void fb_duplicate(outcome* o) { builder(o, 4); }
static void fb_f16_scalar(outcome* o) { builder(o, 5); }
static void fb_token_data(outcome* o) { builder(o, 6); }
static void fb_open_dict(outcome* o) { builder(o, 7); }

/* --- Frames fed to an adapter --------------------------------------------------------- */

static ccshim_adapter* sig_adapter; /* (f32[4]) -> f32[4], v2 */
static ccshim_adapter* v3_adapter;  /* v3, no signature */
static ccshim_context* host;
static float buf4[4], out4[4];

/* Builds the usual good frame, lets `damage` spoil it, calls, records. */
static void adapter_case(outcome* o, ccshim_adapter* a, int damage) {
  int64_t four = 4, two = 2;
  int32_t ints[4];
  ccshim_frame_builder* fb;
  ccshim_frame_builder_new(&fb);
  switch (damage) {
    case 1: ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_S32, ints, 1, &four); break;
    case 2: ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, buf4, 1, &two); break;
    case 3: ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, NULL, 1, &four); break;
    case 4: break; /* no argument */
    default: ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, buf4, 1, &four); break;
  }
  ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F32, out4, 1, &four);
  if (damage == 5)
    ccshim_frame_builder_add_scalar(fb, "opaque", XLA_FFI_DataType_F64, &(double){1});
  XLA_FFI_CallFrame f;
  ccshim_frame_builder_build(fb, ccshim_ffi_api(), host, XLA_FFI_ExecutionStage_EXECUTE, &f);
  void* no_buffer[1] = {NULL};
  if (damage == 6) f.struct_size = 100;
  if (damage == 7) f.args.args = no_buffer;
  if (damage == 8) f.rets.rets = NULL;
  if (damage == 9) f.attrs.size = -5;
  from_error(o, ccshim_adapter_handler(a)(&f));
  ccshim_frame_builder_free(fb);
}
static void ad_dtype(outcome* o) { adapter_case(o, sig_adapter, 1); }
static void ad_dims(outcome* o) { adapter_case(o, sig_adapter, 2); }
static void ad_null_data(outcome* o) { adapter_case(o, sig_adapter, 3); }
static void ad_count(outcome* o) { adapter_case(o, sig_adapter, 4); }
static void ad_attr_type(outcome* o) { adapter_case(o, v3_adapter, 5); }
static void ad_frame_size(outcome* o) { adapter_case(o, sig_adapter, 6); }
static void ad_null_buffer(outcome* o) { adapter_case(o, v3_adapter, 7); }
static void ad_null_rets(outcome* o) { adapter_case(o, v3_adapter, 8); }
static void ad_attrs_size(outcome* o) { adapter_case(o, v3_adapter, 9); }

/* --- The runtime's API table --------------------------------------------------------- */

static void api_error_size(outcome* o) {
  XLA_FFI_Error_Create_Args a = {8, NULL, "m", XLA_FFI_Error_Code_INTERNAL};
  from_error(o, ccshim_ffi_api()->XLA_FFI_Error_Create(&a));
}
static void api_stream_host(outcome* o) {
  XLA_FFI_Stream_Get_Args a = {XLA_FFI_Stream_Get_Args_STRUCT_SIZE, NULL, host, NULL};
  from_error(o, ccshim_ffi_api()->XLA_FFI_Stream_Get(&a));
}
static void api_stream_null_ctx(outcome* o) {
  XLA_FFI_Stream_Get_Args a = {XLA_FFI_Stream_Get_Args_STRUCT_SIZE, NULL, NULL, NULL};
  from_error(o, ccshim_ffi_api()->XLA_FFI_Stream_Get(&a));
}
static void api_alignment(outcome* o) {
  XLA_FFI_DeviceMemory_Allocate_Args a = {
      XLA_FFI_DeviceMemory_Allocate_Args_STRUCT_SIZE, NULL, host, 64, 48, NULL};
  from_error(o, ccshim_ffi_api()->XLA_FFI_DeviceMemory_Allocate(&a));
}
static void api_state_execute(outcome* o) {
  XLA_FFI_TypeId t = {1};
  XLA_FFI_State_Get_Args a = {XLA_FFI_State_Get_Args_STRUCT_SIZE, NULL, host,
                              XLA_FFI_ExecutionStage_EXECUTE,     &t,   NULL};
  from_error(o, ccshim_ffi_api()->XLA_FFI_State_Get(&a));
}
static void api_register_size(outcome* o) {
  XLA_FFI_Handler_Register_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = 90;
  from_error(o, ccshim_ffi_api()->XLA_FFI_Handler_Register(&a));
}
static void api_pool(outcome* o) {
  int64_t n;
  XLA_FFI_ThreadPool_NumThreads_Args a = {XLA_FFI_ThreadPool_NumThreads_Args_STRUCT_SIZE, NULL,
                                          host, &n};
  from_error(o, ccshim_ffi_api()->XLA_FFI_ThreadPool_NumThreads(&a));
}
static void api_null_args(outcome* o) { from_error(o, ccshim_ffi_api()->XLA_FFI_RunId_Get(NULL)); }

/* --- Registries and the legacy invoker ------------------------------------------------ */

static XLA_FFI_Error* silent(XLA_FFI_CallFrame* f) {
  (void)f;
  return NULL;
}
static void reg_version(outcome* o) {
  from_status(o, ccshim_register_handler("catalogue.silent", "cpu", silent, 0));
}
static void reg_no_execute(outcome* o) {
  XLA_FFI_Handler_Bundle b = {silent, NULL, NULL, NULL, NULL};
  from_status(o, ccshim_register("catalogue.noexec", "cpu", &b, 0));
}
static void reg_lookup(outcome* o) {
  ccshim_registration r;
  from_status(o, ccshim_lookup("catalogue.none", "gpu", &r));
}
static void legacy_dup(outcome* o) {
  ccshim_legacy_register("catalogue.k", (ccshim_legacy_fn)kernel_v1, "Host");
  from_status(o, ccshim_legacy_register("catalogue.k", (ccshim_legacy_fn)kernel_v2, "Host"));
}
static void invoke_counts(outcome* o) {
  ccshim_signature* s;
  ccshim_signature_parse("(f32[4]) -> f32[4]", &s);
  ccshim_legacy_call c;
  memset(&c, 0, sizeof c);
  c.fn = (ccshim_legacy_fn)kernel_v2;
  c.api_version = 2;
  c.signature = s;
  void* rets[1] = {out4};
  c.rets = rets;
  c.num_rets = 1;
  ccshim_legacy_outcome out;
  from_status(o, ccshim_legacy_invoke(&c, &out));
  ccshim_signature_free(s);
}
static void invoke_version(outcome* o) {
  ccshim_legacy_call c;
  memset(&c, 0, sizeof c);
  c.fn = (ccshim_legacy_fn)kernel_v1;
  c.api_version = 7;
  ccshim_legacy_outcome out;
  from_status(o, ccshim_legacy_invoke(&c, &out));
}
static void context_platform(outcome* o) {
  ccshim_context_options opts = CCSHIM_CONTEXT_OPTIONS_INIT;
  opts.platform = "metal";
  ccshim_context* c = NULL;
  from_status(o, ccshim_context_new(&opts, &c));
}
static void free_registered(outcome* o) {
  ccshim_adapter* a;
  ccshim_wrap((ccshim_legacy_fn)kernel_v1, 1, CCSHIM_PLATFORM_HOST, NULL, NULL, &a);
  ccshim_register_handler("catalogue.registered", "cpu", ccshim_adapter_handler(a), 0);
  from_status(o, ccshim_adapter_free(a));
  ccshim_unregister("catalogue.registered", "cpu");
  ccshim_adapter_free(a);
}

static const bad_case cases[] = {
    {"signature: unclosed dims", sig_unclosed, "CCSHIM_ESIGNATURE",
     "column 20: expected ',' or ']' after a dimension, found ')'"},
    {"signature: no arrow", sig_no_arrow, "CCSHIM_ESIGNATURE", "expected '->'"},
    {"signature: unknown dtype", sig_dtype, "CCSHIM_ESIGNATURE", "unknown element type 'float32'"},
    {"signature: dynamic dim", sig_dynamic, "CCSHIM_ESIGNATURE",
     "dynamic dimensions are not supported"},
    {"signature: trailing text", sig_trailing, "CCSHIM_ESIGNATURE",
     "expected end of text after the result, found ';'"},
    {"signature: binary byte", sig_binary, "CCSHIM_ESIGNATURE", "found byte 0xff"},
    {"signature: dim overflow", sig_overflow, "CCSHIM_EOVERFLOW", "overflows int64"},
    {"wrap: API version 4", wrap_version, "CCSHIM_EINVAL", "API version 4 is not a legacy form"},
    {"wrap: NULL kernel", wrap_null, "CCSHIM_EINVAL", "the kernel is NULL"},
    {"wrap: bad signature", wrap_badsig, "CCSHIM_ESIGNATURE", "signature column 7"},
    {"wrap: nested layout on GPU", wrap_nested_gpu, "CCSHIM_EINVAL",
     "nested tuple layout is a CPU convention"},
    {"wrap: unknown legacy target", wrap_unknown_target, "CCSHIM_ENOENT",
     "no legacy target 'no_such_kernel'"},
    {"wrap: unknown platform", wrap_platform, "CCSHIM_EINVAL", "unknown platform 'TPU'"},
    {"builder: negative dim", fb_negative_dim, "CCSHIM_EINVAL",
     "dimension 0 is -3; expected a size >= 0"},
    {"builder: rank 65", fb_rank, "CCSHIM_EOVERFLOW", "rank 65 is out of range; expected 0..64"},
    {"builder: dtype 14", fb_dtype, "CCSHIM_EINVAL", "dtype 14 is not an XLA FFI data type"},
    {"builder: NULL name", fb_null_name, "CCSHIM_EINVAL", "attribute name is NULL"},
    {"builder: duplicate name", fb_duplicate, "CCSHIM_EEXIST", "'a' is already set"},
    {"builder: f16 scalar", fb_f16_scalar, "CCSHIM_EINVAL", "dtype f16 is not one XLA delivers"},
    {"builder: token with data", fb_token_data, "CCSHIM_EINVAL",
     "a token has rank 0 and NULL data"},
    {"builder: open dictionary", fb_open_dict, "CCSHIM_EINVAL", "a dictionary is still open"},
    {"adapter: wrong dtype", ad_dtype, "INVALID_ARGUMENT", "arg 0: expected f32[4], got s32[4]"},
    {"adapter: wrong dims", ad_dims, "INVALID_ARGUMENT", "arg 0: expected f32[4], got f32[2]"},
    {"adapter: NULL data", ad_null_data, "INVALID_ARGUMENT", "arg 0: data is NULL for f32[4]"},
    {"adapter: wrong count", ad_count, "INVALID_ARGUMENT",
     "expected 1 argument(s) and 1 result(s)"},
    {"adapter: opaque of wrong type", ad_attr_type, "INVALID_ARGUMENT",
     "attribute 'opaque': expected a string or a u8/s8 array, got a scalar"},
    {"adapter: frame size", ad_frame_size, "INVALID_ARGUMENT",
     "Unexpected XLA_FFI_CallFrame size: expected 168, got 100"},
    {"adapter: NULL buffer", ad_null_buffer, "INVALID_ARGUMENT",
     "arg 0: the buffer pointer is NULL"},
    {"adapter: NULL result array", ad_null_rets, "INVALID_ARGUMENT",
     "the result array is NULL with 1 entries"},
    {"adapter: negative attrs size", ad_attrs_size, "INVALID_ARGUMENT",
     "malformed attributes: size -5"},
    {"api: Error_Create size", api_error_size, "INVALID_ARGUMENT", "expected 28, got 8"},
    {"api: stream on host", api_stream_host, "UNIMPLEMENTED",
     "XLA FFI GPU context is not available"},
    {"api: stream, NULL ctx", api_stream_null_ctx, "INVALID_ARGUMENT", "ctx is NULL"},
    {"api: alignment 48", api_alignment, "INVALID_ARGUMENT", "Unsupported alignment: 48"},
    {"api: state at execute", api_state_execute, "INVALID_ARGUMENT",
     "the execute stage (3) has no state"},
    {"api: register size 90", api_register_size, "INVALID_ARGUMENT", "expected 92, got 90"},
    {"api: no thread pool", api_pool, "UNIMPLEMENTED", "No intra-op thread pool"},
    {"api: NULL args", api_null_args, "INVALID_ARGUMENT", "XLA_FFI_RunId_Get: args is NULL"},
    {"registry: version 0.0", reg_version, "CCSHIM_EVERSION", "API version (0.0) is incompatible"},
    {"registry: no execute", reg_no_execute, "CCSHIM_EINVAL",
     "must provide an execute implementation"},
    {"registry: not found", reg_lookup, "CCSHIM_ENOENT",
     "No FFI handler registered for catalogue.none on a platform gpu (canonical cuda)"},
    {"legacy registry: conflict", legacy_dup, "CCSHIM_EEXIST",
     "already registered with a different address"},
    {"invoker: counts", invoke_counts, "CCSHIM_EINVAL",
     "the signature has 1 operand and 1 result buffers, the call 0 and 1"},
    {"invoker: API version 7", invoke_version, "CCSHIM_EINVAL", "API version 7; expected 1"},
    {"context: platform", context_platform, "CCSHIM_EINVAL", "unknown platform 'metal'"},
    {"free: registered adapter", free_registered, "CCSHIM_EBUSY", "ccshim_unregister it first"},
};

int main(void) {
  CHECK_OK(ccshim_context_new(NULL, &host));
  CHECK_OK(ccshim_wrap((ccshim_legacy_fn)kernel_v2, 2, CCSHIM_PLATFORM_HOST, "(f32[4]) -> f32[4]",
                       NULL, &sig_adapter));
  CHECK_OK(
      ccshim_wrap((ccshim_legacy_fn)kernel_v1, 3, CCSHIM_PLATFORM_HOST, NULL, NULL, &v3_adapter));
  int failed = 0;
  size_t n = sizeof cases / sizeof cases[0];
  for (size_t i = 0; i < n; i++) {
    outcome o;
    memset(&o, 0, sizeof o);
    cases[i].run(&o);
    if (strcmp(o.code, cases[i].code) != 0 || strstr(o.message, cases[i].fragment) == NULL) {
      fprintf(stderr, "case '%s': want %s \"%s\", got %s \"%s\"\n", cases[i].name, cases[i].code,
              cases[i].fragment, o.code, o.message);
      failed++;
    }
  }
  CHECK_OK(ccshim_adapter_free(sig_adapter));
  CHECK_OK(ccshim_adapter_free(v3_adapter));
  ccshim_context_free(host);
  printf("bad-input catalogue: %zu cases, %d failed\n", n, failed);
  return failed ? 1 : 0;
}
