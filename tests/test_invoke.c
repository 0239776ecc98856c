/*
 * Invoke by name and by handler pointer at every stage; errors readable as
 * (code, message); the plain-C handlers of tests/handlers run end to end,
 * State made at instantiate read at execute, and asynchronous handlers that
 * complete a future from the context's thread pool.
 */
#include <stdint.h>

#include "ccshim/runtime.h"
#include "check.h"
#include "handlers/c_handlers.h"

static void test_scale_by_name(void) {
  CHECK_OK(ccshim_register_handler("inv.scale", "cpu", c_scale, 0));
  ccshim_context* ctx;
  CHECK_OK(ccshim_context_new(NULL, &ctx));
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  float x[4] = {1, 2, 3, -4}, y[4] = {0};
  int64_t dims[1] = {4};
  float factor = 2.5f;
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, x, 1, dims));
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F32, y, 1, dims));
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "factor", XLA_FFI_DataType_F32, &factor));
  CHECK_OK(ccshim_invoke("inv.scale", "host", ctx, XLA_FFI_ExecutionStage_EXECUTE, fb, NULL));
  for (int i = 0; i < 4; i++) CHECK(y[i] == x[i] * 2.5f);

  /* Stages the bundle has no handler for do nothing. */
  y[0] = -1;
  CHECK_OK(ccshim_invoke("inv.scale", "host", ctx, XLA_FFI_ExecutionStage_INSTANTIATE, fb, NULL));
  CHECK(y[0] == -1);

  /* The handler's own error, readable as (code, message). */
  ccshim_frame_builder_reset(fb);
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, x, 1, dims));
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F32, y, 1, dims));
  XLA_FFI_Error* err = NULL;
  CHECK_STATUS(ccshim_invoke("inv.scale", "cpu", ctx, XLA_FFI_ExecutionStage_EXECUTE, fb, &err),
               CCSHIM_EHANDLER);
  CHECK_EQ(ccshim_error_code(err), XLA_FFI_Error_Code_INVALID_ARGUMENT);
  CHECK_STR_EQ(ccshim_error_message(err), "c_scale: expected an f32 scalar attribute 'factor'");
  CHECK_STR_EQ(ccshim_last_error(),
               "INVALID_ARGUMENT: c_scale: expected an f32 scalar attribute 'factor'");
  ccshim_error_free(err);

  /* Wrong platform, unknown name, bad stage. */
  ccshim_context* gpu;
  ccshim_context_options o = CCSHIM_CONTEXT_OPTIONS_INIT;
  o.platform = "cuda";
  CHECK_OK(ccshim_context_new(&o, &gpu));
  CHECK_STATUS(ccshim_invoke("inv.scale", "cpu", gpu, XLA_FFI_ExecutionStage_EXECUTE, fb, NULL),
               CCSHIM_EINVAL);
  CHECK_CONTAINS(ccshim_last_error(), "registered for host but the context is for cuda");
  CHECK_STATUS(ccshim_invoke("inv.nothing", "cpu", ctx, XLA_FFI_ExecutionStage_EXECUTE, fb, NULL),
               CCSHIM_ENOENT);
  CHECK_STATUS(ccshim_invoke("inv.scale", "cpu", ctx, (XLA_FFI_ExecutionStage)9, fb, NULL),
               CCSHIM_EINVAL);
  ccshim_context_free(gpu);
  ccshim_frame_builder_free(fb);
  ccshim_context_free(ctx);
}

static void test_fail_codes(void) {
  ccshim_context* ctx;
  CHECK_OK(ccshim_context_new(NULL, &ctx));
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  for (int64_t code = 0; code <= 16; code++) {
    ccshim_frame_builder_reset(fb);
    CHECK_OK(ccshim_frame_builder_add_scalar(fb, "code", XLA_FFI_DataType_S64, &code));
    CHECK_OK(ccshim_frame_builder_add_string(fb, "message", "it broke", 8));
    XLA_FFI_Error* err = NULL;
    ccshim_status st = ccshim_invoke_handler(c_fail, ctx, XLA_FFI_ExecutionStage_EXECUTE, fb, &err);
    if (code == 0) { /* an OK-coded error reads as success, as in XLA */
      CHECK_OK(st);
      CHECK(err == NULL);
      continue;
    }
    CHECK_EQ(st, CCSHIM_EHANDLER);
    CHECK_EQ(ccshim_error_code(err), code);
    CHECK_STR_EQ(ccshim_error_message(err), "it broke");
    ccshim_error_free(err);
  }
  ccshim_frame_builder_free(fb);
  ccshim_context_free(ctx);
}

static void test_state(void) {
  XLA_FFI_Handler_Bundle b = {c_counter_instantiate, NULL, NULL, c_counter_execute, NULL};
  CHECK_OK(ccshim_register("inv.counter", "cpu", &b, 0));
  ccshim_context* ctx;
  CHECK_OK(ccshim_context_new(NULL, &ctx));
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  int32_t out = 0;
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_S32, &out, 0, NULL));
  /* Execute before instantiate: no state yet. */
  CHECK_STATUS(ccshim_invoke("inv.counter", "cpu", ctx, XLA_FFI_ExecutionStage_EXECUTE, fb, NULL),
               CCSHIM_EHANDLER);
  CHECK_STR_EQ(ccshim_last_error(), "NOT_FOUND: State is not set");
  CHECK_OK(
      ccshim_invoke("inv.counter", "cpu", ctx, XLA_FFI_ExecutionStage_INSTANTIATE, NULL, NULL));
  for (int i = 1; i <= 3; i++) {
    CHECK_OK(ccshim_invoke("inv.counter", "cpu", ctx, XLA_FFI_ExecutionStage_EXECUTE, fb, NULL));
    CHECK_EQ(out, i);
  }
  /* A second call site has a state of its own. */
  ccshim_context* other;
  CHECK_OK(ccshim_context_new(NULL, &other));
  CHECK_OK(
      ccshim_invoke("inv.counter", "cpu", other, XLA_FFI_ExecutionStage_INSTANTIATE, NULL, NULL));
  CHECK_OK(ccshim_invoke("inv.counter", "cpu", other, XLA_FFI_ExecutionStage_EXECUTE, fb, NULL));
  CHECK_EQ(out, 1);
  ccshim_context_free(other);
  ccshim_frame_builder_free(fb);
  ccshim_context_free(ctx);
}

/* An asynchronous handler: sums its s64 argument on the thread pool, one
 * task per chunk, and completes the future from the last task. */
typedef struct job {
  const XLA_FFI_Api* api;
  XLA_FFI_Future* future;
  const int64_t* in;
  int64_t* out;
  int64_t n;
  int fail;
} job;

static void run_job(void* p) {
  job* j = p;
  int64_t sum = 0;
  for (int64_t i = 0; i < j->n; i++) sum += j->in[i];
  *j->out = sum;
  if (j->fail) {
    XLA_FFI_Error_Create_Args c = {XLA_FFI_Error_Create_Args_STRUCT_SIZE, NULL, "async failure",
                                   XLA_FFI_Error_Code_ABORTED};
    XLA_FFI_Future_SetError_Args e = {XLA_FFI_Future_SetError_Args_STRUCT_SIZE, NULL, j->future,
                                      j->api->XLA_FFI_Error_Create(&c)};
    CHECK(j->api->XLA_FFI_Future_SetError(&e) == NULL);
  } else {
    XLA_FFI_Future_SetAvailable_Args a = {XLA_FFI_Future_SetAvailable_Args_STRUCT_SIZE, NULL,
                                          j->future};
    CHECK(j->api->XLA_FFI_Future_SetAvailable(&a) == NULL);
  }
  free(j);
}

static XLA_FFI_Error* async_sum(XLA_FFI_CallFrame* f) {
  const XLA_FFI_Api* api = f->api;
  job* j = calloc(1, sizeof *j);
  const XLA_FFI_Buffer* in = f->args.args[0];
  j->api = api;
  j->in = in->data;
  j->n = in->dims[0];
  j->out = ((XLA_FFI_Buffer*)f->rets.rets[0])->data;
  j->fail = f->attrs.size > 0;
  XLA_FFI_Future_Create_Args c = {XLA_FFI_Future_Create_Args_STRUCT_SIZE, NULL, NULL};
  XLA_FFI_Error* err = api->XLA_FFI_Future_Create(&c);
  if (err) return err;
  j->future = c.future;
  XLA_FFI_ThreadPool_Schedule_Args s = {XLA_FFI_ThreadPool_Schedule_Args_STRUCT_SIZE, NULL, f->ctx,
                                        run_job, j};
  if ((err = api->XLA_FFI_ThreadPool_Schedule(&s)) != NULL) return err;
  f->future = c.future;
  return NULL;
}

static void test_futures_on_pool(void) {
  ccshim_context_options o = CCSHIM_CONTEXT_OPTIONS_INIT;
  o.num_threads = 2;
  ccshim_context* ctx;
  CHECK_OK(ccshim_context_new(&o, &ctx));
  int64_t in[1000], out = 0, want = 0;
  for (int i = 0; i < 1000; i++) want += in[i] = i * 3 - 7;
  int64_t dims[1] = {1000};
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_S64, in, 1, dims));
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_S64, &out, 0, NULL));
  for (int round = 0; round < 50; round++) {
    out = 0;
    CHECK_OK(ccshim_invoke_handler(async_sum, ctx, XLA_FFI_ExecutionStage_EXECUTE, fb, NULL));
    CHECK_EQ(out, want); /* invoke returned only once the future completed */
  }
  CHECK_OK(ccshim_frame_builder_add_string(fb, "fail", "yes", 3));
  XLA_FFI_Error* err = NULL;
  CHECK_STATUS(ccshim_invoke_handler(async_sum, ctx, XLA_FFI_ExecutionStage_EXECUTE, fb, &err),
               CCSHIM_EHANDLER);
  CHECK_EQ(ccshim_error_code(err), XLA_FFI_Error_Code_ABORTED);
  CHECK_STR_EQ(ccshim_error_message(err), "async failure");
  ccshim_error_free(err);
  ccshim_frame_builder_free(fb);
  ccshim_context_free(ctx);
}

static void test_context_refusals(void) {
  ccshim_context* ctx = NULL;
  ccshim_context_options o = CCSHIM_CONTEXT_OPTIONS_INIT;
  o.platform = "tpu";
  CHECK_STATUS(ccshim_context_new(&o, &ctx), CCSHIM_EINVAL);
  CHECK_CONTAINS(ccshim_last_error(), "unknown platform 'tpu'");
  CHECK(ctx == NULL);
  o.platform = "cuda";
  o.num_threads = 2;
  CHECK_STATUS(ccshim_context_new(&o, &ctx), CCSHIM_EINVAL);
  o.platform = NULL;
  o.num_threads = -1;
  CHECK_STATUS(ccshim_context_new(&o, &ctx), CCSHIM_EINVAL);
  CHECK_STATUS(ccshim_invoke_handler(NULL, NULL, XLA_FFI_ExecutionStage_EXECUTE, NULL, NULL),
               CCSHIM_EINVAL);
}

int main(void) {
  test_scale_by_name();
  test_fail_codes();
  test_state();
  test_futures_on_pool();
  test_context_refusals();
  printf("invoke: ok\n");
  return 0;
}
