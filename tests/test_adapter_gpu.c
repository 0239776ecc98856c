/*
 * The GPU forms (CUDA and ROCm alike) through adapters, run on the host: the
 * kernels below have the legacy GPU signature but work on host memory, and
 * the stream is the value the embedded runtime hands out (or one given), so
 * the convention is checked without a GPU.  buffers[] holds the operand
 * leaves then the result leaves, NULL for tokens; the stream comes from
 * Stream_Get; the opaque bytes arrive NUL-terminated with the true length;
 * failures read "CustomCall failed: <message>" as in XLA's GPU runtime.
 */
#include <stdint.h>

#include "adapter_util.h"

/* What the last call saw. */
static void* seen_stream;
static void* seen_buffers[8];
static char seen_opaque[64];
static size_t seen_len;
static int seen_terminated, calls;

static void record(void* stream, void** buffers, size_t n, const char* opaque, size_t len) {
  calls++;
  seen_stream = stream;
  for (size_t i = 0; i < n; i++) seen_buffers[i] = buffers[i];
  seen_len = len;
  memcpy(seen_opaque, opaque, len < sizeof seen_opaque ? len : sizeof seen_opaque);
  seen_terminated = opaque[len] == '\0';
}

/* (f32[128], token[], f32[2048]) -> (f32[2048], token[]):
 * buffers = {B, NULL, C, A, NULL}. */
static void gpu_add_v1(void* stream, void** buffers, const char* opaque, size_t len) {
  record(stream, buffers, 5, opaque, len);
  const float* b = buffers[0];
  const float* c = buffers[2];
  float* a = buffers[3];
  for (int i = 0; i < 2048; i++) a[i] = b[i % 128] + c[i];
}

static void gpu_add_v2(void* stream, void** buffers, const char* opaque, size_t len,
                       XlaCustomCallStatus* status) {
  gpu_add_v1(stream, buffers, opaque, len);
  if (len > 0 && opaque[0] == '!') XlaCustomCallStatusSetFailure(status, opaque + 1, len - 1);
}

static const char* text = "(f32[128], token[], f32[2048]) -> (f32[2048], token[])";

static void run_both(ccshim_platform platform, int version, ccshim_entry_kind entry,
                     void* user_stream) {
  ccshim_legacy_fn fn = version == 1 ? (ccshim_legacy_fn)gpu_add_v1 : (ccshim_legacy_fn)gpu_add_v2;
  ccshim_wrap_options o = CCSHIM_WRAP_OPTIONS_INIT;
  o.entry = entry;
  ccshim_adapter* a;
  CHECK_OK(ccshim_wrap(fn, version, platform, text, &o, &a));
  ccshim_context_options co = CCSHIM_CONTEXT_OPTIONS_INIT;
  co.platform = platform == CCSHIM_PLATFORM_ROCM ? "rocm" : "cuda";
  co.stream = user_stream;
  ccshim_context* ctx;
  CHECK_OK(ccshim_context_new(&co, &ctx));
  void* stream = ccshim_context_stream(ctx);
  CHECK(stream != NULL);
  if (user_stream) CHECK_PTR_EQ(stream, user_stream);

  ccshim_signature* sig = parse_sig(text);
  static float b[128], c[2048], typed[2048], legacy[2048];
  fill_floats(b, 128, 3);
  fill_floats(c, 2048, 4);
  memset(typed, 0x11, sizeof typed);
  memset(legacy, 0x22, sizeof legacy);
  void* args[3] = {b, NULL, c};
  void* rt[2] = {typed, NULL};
  void* rl[2] = {legacy, NULL};
  static const char opaque[] = {'c', 'f', 'g', 0, 'x', 0};
  ccshim_frame_builder* fb = frame_for(sig, args, rt);
  CHECK_OK(
      ccshim_frame_builder_add_array(fb, "opaque", XLA_FFI_DataType_U8, opaque, sizeof opaque));
  calls = 0;
  CHECK(call_adapter(a, fb, ctx) == NULL);
  CHECK_EQ(calls, 1);
  CHECK_PTR_EQ(seen_stream, stream);
  CHECK_PTR_EQ(seen_buffers[0], b);
  CHECK(seen_buffers[1] == NULL); /* the token */
  CHECK_PTR_EQ(seen_buffers[2], c);
  CHECK_PTR_EQ(seen_buffers[3], typed);
  CHECK(seen_buffers[4] == NULL);
  CHECK_EQ(seen_len, sizeof opaque); /* GPU v1 sees the opaque too */
  CHECK_MEM_EQ(seen_opaque, opaque, sizeof opaque);
  CHECK(seen_terminated);

  ccshim_legacy_outcome lo = call_legacy(fn, version, platform, sig, CCSHIM_TUPLES_FLAT, args, rl,
                                         opaque, sizeof opaque, stream);
  CHECK(!lo.failed);
  CHECK_PTR_EQ(seen_stream, stream);
  CHECK_MEM_EQ(typed, legacy, sizeof typed);
  for (int i = 0; i < 2048; i++) CHECK(typed[i] == b[i % 128] + c[i]);

  if (version > 1) {
    /* A failure, worded as XLA's GPU runtime words it, on both sides. */
    ccshim_frame_builder_free(fb);
    fb = frame_for(sig, args, rt);
    CHECK_OK(ccshim_frame_builder_add_string(fb, "opaque", "!device on fire", 15));
    XLA_FFI_Error* err = call_adapter(a, fb, ctx);
    CHECK(err != NULL);
    CHECK_EQ(ccshim_error_code(err), XLA_FFI_Error_Code_INTERNAL);
    CHECK_STR_EQ(ccshim_error_message(err), "CustomCall failed: device on fire");
    lo = call_legacy(fn, version, platform, sig, CCSHIM_TUPLES_FLAT, args, rl, "!device on fire",
                     15, stream);
    CHECK(lo.failed);
    CHECK_STR_EQ(lo.message, ccshim_error_message(err));
    ccshim_legacy_outcome_reset(&lo);
    ccshim_error_free(err);
  }

  /* On a host context there is no stream: Stream_Get's error is passed on
   * and the kernel is not called. */
  ccshim_context* host;
  CHECK_OK(ccshim_context_new(NULL, &host));
  calls = 0;
  expect_ffi_error(call_adapter(a, fb, host), XLA_FFI_Error_Code_UNIMPLEMENTED,
                   "XLA FFI GPU context is not available");
  CHECK_EQ(calls, 0);
  ccshim_context_free(host);

  ccshim_frame_builder_free(fb);
  ccshim_signature_free(sig);
  ccshim_context_free(ctx);
  CHECK_OK(ccshim_adapter_free(a));
}

int main(void) {
  int real_stream_stand_in;
  for (int e = CCSHIM_ENTRY_PREBUILT; e <= CCSHIM_ENTRY_CLOSURE; e++)
    for (int version = 1; version <= 3; version++) {
      run_both(CCSHIM_PLATFORM_CUDA, version, (ccshim_entry_kind)e, NULL);
      run_both(CCSHIM_PLATFORM_ROCM, version, (ccshim_entry_kind)e, &real_stream_stand_in);
    }
  printf("adapters, GPU forms on the host: ok (v1, v2, v3; CUDA and ROCm)\n");
  return 0;
}
