/*
 * The library just outside the malformed-frame catalogue: valid calls with
 * more buffers than any internal block holds, frames whose numbers are huge
 * (ranks, opaque lengths), a frame without an API table, and the W^X probe
 * behind the last prebuilt entry.  Each case ran wrong before it was fixed:
 * stack corruption, reads past an array, a dropped failure, a leaked
 * writable+executable page.  Prints the number of cases.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "adapter_util.h"

static ccshim_context* host;
static int cases;

/* --- Many buffers: every arity crosses the fast path's block ------------------ */

static size_t g_n;       /* operands the kernels read */
static size_t g_results; /* results of the tuple kernel */
static int g_calls;

/* out[0] = sum of in[i][0] (+ 1 for v2 and v3, so forms are told apart). */
static void sum_v1(void* out, const void** in) {
  float s = 0;
  for (size_t i = 0; i < g_n; i++) s += ((const float*)in[i])[0];
  *(float*)out = s;
  g_calls++;
}
static void sum_v2(void* out, const void** in, XlaCustomCallStatus* st) {
  (void)st;
  sum_v1(out, in);
  *(float*)out += 1;
}
static void sum_v3(void* out, const void** in, const char* op, size_t len,
                   XlaCustomCallStatus* st) {
  (void)op;
  (void)len;
  sum_v2(out, in, st);
}
/* A tuple of g_results results: result r = in[0][0] * r. */
static void spread_v2(void* out, const void** in, XlaCustomCallStatus* st) {
  (void)st;
  void** rets = out;
  for (size_t r = 0; r < g_results; r++) *(float*)rets[r] = ((const float*)in[0])[0] * (float)r;
  g_calls++;
}

/* "(f32[1], ... n times) -> f32[1]" in a heap string (owned by the caller). */
static char* many_operands(size_t n) {
  char* s = malloc(n * 8 + 32);
  CHECK(s != NULL);
  char* p = s;
  *p++ = '(';
  for (size_t i = 0; i < n; i++) p += sprintf(p, i ? ", f32[1]" : "f32[1]");
  strcpy(p, ") -> f32[1]");
  return s;
}

static void many_buffers(size_t n, int version, int with_signature) {
  static const ccshim_legacy_fn fns[] = {NULL, (ccshim_legacy_fn)sum_v1, (ccshim_legacy_fn)sum_v2,
                                         (ccshim_legacy_fn)sum_v3};
  char* text = many_operands(n);
  ccshim_adapter* a;
  CHECK_OK(ccshim_wrap(fns[version], version, CCSHIM_PLATFORM_HOST, with_signature ? text : NULL,
                       NULL, &a));
  float* in = malloc(n * sizeof *in);
  CHECK(in != NULL);
  float want = version > 1 ? 1.0f : 0.0f, got = -1;
  for (size_t i = 0; i < n; i++) {
    in[i] = (float)(i % 7);
    want += in[i];
  }
  int64_t one = 1;
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  for (size_t i = 0; i < n; i++)
    CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, &in[i], 1, &one));
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F32, &got, 1, &one));
  g_n = n;
  g_calls = 0;
  XLA_FFI_Error* err = call_adapter(a, fb, host);
  if (err) CHECK_FAIL_("%zu buffers, v%d: %s", n, version, ccshim_error_message(err));
  CHECK_EQ(g_calls, 1);
  if (got != want) CHECK_FAIL_("%zu buffers, v%d: got %g, want %g", n, version, got, want);
  ccshim_frame_builder_free(fb);
  CHECK_OK(ccshim_adapter_free(a));
  free(in);
  free(text);
  cases++;
}

static void many_results(size_t n) {
  char* text = malloc(n * 8 + 32);
  CHECK(text != NULL);
  char* p = text + sprintf(text, "(f32[1]) -> (");
  for (size_t i = 0; i < n; i++) p += sprintf(p, i ? ", f32[1]" : "f32[1]");
  strcpy(p, ")");
  ccshim_adapter* a;
  CHECK_OK(ccshim_wrap((ccshim_legacy_fn)spread_v2, 2, CCSHIM_PLATFORM_HOST, text, NULL, &a));
  float x = 3, *outs = calloc(n, sizeof *outs);
  CHECK(outs != NULL);
  int64_t one = 1;
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, &x, 1, &one));
  for (size_t i = 0; i < n; i++)
    CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F32, &outs[i], 1, &one));
  g_results = n;
  XLA_FFI_Error* err = call_adapter(a, fb, host);
  if (err) CHECK_FAIL_("%zu results: %s", n, ccshim_error_message(err));
  for (size_t i = 0; i < n; i++)
    if (outs[i] != 3.0f * (float)i) CHECK_FAIL_("%zu results: result %zu is %g", n, i, outs[i]);
  ccshim_frame_builder_free(fb);
  CHECK_OK(ccshim_adapter_free(a));
  free(outs);
  free(text);
  cases++;
}

/* --- Huge numbers in a frame ----------------------------------------------------- */

static void fail_v2(void* out, const void** in, XlaCustomCallStatus* st) {
  (void)out;
  (void)in;
  g_calls++;
  XlaCustomCallStatusSetFailure(st, "fail_v2 failed", 14);
}

/* A builder with one f32[1] argument and one f32[1] result. */
static ccshim_frame_builder* one_in_one_out(float* in, float* out) {
  static int64_t one = 1;
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, in, 1, &one));
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F32, out, 1, &one));
  return fb;
}

/* No signature, NULL data, and a rank far beyond 64 with one dim behind it:
 * nothing may read dims[1]. */
static void huge_rank(void) {
  ccshim_adapter* a;
  CHECK_OK(ccshim_wrap((ccshim_legacy_fn)sum_v2, 2, CCSHIM_PLATFORM_HOST, NULL, NULL, &a));
  int64_t* dims = malloc(sizeof *dims); /* exactly one: ASan sees any read past it */
  CHECK(dims != NULL);
  dims[0] = 5;
  float out = 0;
  ccshim_frame_builder* fb = one_in_one_out(&out, &out);
  XLA_FFI_CallFrame f;
  CHECK_OK(
      ccshim_frame_builder_build(fb, ccshim_ffi_api(), host, XLA_FFI_ExecutionStage_EXECUTE, &f));
  XLA_FFI_Buffer* b = f.args.args[0];
  XLA_FFI_Buffer saved = *b; /* the builder owns what b points at */
  b->data = NULL;
  b->rank = (int64_t)1 << 40;
  b->dims = dims;
  g_calls = 0;
  expect_ffi_error(ccshim_adapter_handler(a)(&f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "arg 0: rank 1099511627776 is out of range; expected 0..64");
  b->rank = -1;
  expect_ffi_error(ccshim_adapter_handler(a)(&f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "arg 0: rank -1 is out of range; expected 0..64");
  CHECK_EQ(g_calls, 0);
  *b = saved;
  ccshim_frame_builder_free(fb);
  CHECK_OK(ccshim_adapter_free(a));
  free(dims);
  cases += 2;
}

/* An opaque whose length says SIZE_MAX (and one just past the limit). */
static void huge_opaque(void) {
  ccshim_adapter* a;
  CHECK_OK(ccshim_wrap((ccshim_legacy_fn)sum_v3, 3, CCSHIM_PLATFORM_HOST, NULL, NULL, &a));
  float x = 1, out = 0;
  ccshim_frame_builder* fb = one_in_one_out(&x, &out);
  CHECK_OK(ccshim_frame_builder_add_string(fb, "opaque", "abc", 3));
  XLA_FFI_CallFrame f;
  CHECK_OK(
      ccshim_frame_builder_build(fb, ccshim_ffi_api(), host, XLA_FFI_ExecutionStage_EXECUTE, &f));
  XLA_FFI_ByteSpan* span = f.attrs.attrs[0];
  span->len = SIZE_MAX;
  g_calls = 0;
  g_n = 1;
  expect_ffi_error(ccshim_adapter_handler(a)(&f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "attribute 'opaque': 18446744073709551615 bytes; expected at most "
                   "1073741824");
  span->len = (size_t)CCSHIM_FRAME_MAX_ATTR_BYTES + 1;
  expect_ffi_error(ccshim_adapter_handler(a)(&f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "attribute 'opaque': 1073741825 bytes; expected at most 1073741824");
  CHECK_EQ(g_calls, 0);
  span->len = 3;
  ccshim_frame_builder_free(fb);
  CHECK_OK(ccshim_adapter_free(a));
  cases += 2;
}

/* --- A frame without an API table ------------------------------------------------- */

/* XLA always passes one at execute; a frame without it cannot carry the
 * kernel's failure back, so the kernel is not run and the error is made by
 * ccshim's own table, never dropped as success.  Every path: the fast ones
 * (v1, v2, with and without a signature) and the general one (nested). */
static void null_api(ccshim_legacy_fn fn, int version, const char* signature,
                     ccshim_tuple_layout layout) {
  ccshim_wrap_options o = CCSHIM_WRAP_OPTIONS_INIT;
  o.tuple_operands = layout;
  ccshim_adapter* a;
  CHECK_OK(ccshim_wrap(fn, version, CCSHIM_PLATFORM_HOST, signature, &o, &a));
  float x = 1, out = 0;
  ccshim_frame_builder* fb = one_in_one_out(&x, &out);
  XLA_FFI_CallFrame f;
  CHECK_OK(ccshim_frame_builder_build(fb, NULL, host, XLA_FFI_ExecutionStage_EXECUTE, &f));
  g_calls = 0;
  g_n = 1;
  XLA_FFI_Error* err = ccshim_adapter_handler(a)(&f);
  if (err == NULL)
    CHECK_FAIL_("v%d %s: a frame without api was answered with success", version,
                signature ? signature : "(no signature)");
  expect_ffi_error(err, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "the call frame's api is NULL; the kernel was not called");
  CHECK_EQ(g_calls, 0);
  ccshim_frame_builder_free(fb);
  CHECK_OK(ccshim_adapter_free(a));
  cases++;
}

/* --- The W^X probe behind the last prebuilt entry ----------------------------------- */

static int wx_mappings(void) {
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) return -1;
  char line[4096];
  int n = 0;
  while (fgets(line, sizeof line, maps)) {
    char perms[8] = "";
    if (sscanf(line, "%*x-%*x %7s", perms) == 1 && perms[1] == 'w' && perms[2] == 'x') n++;
  }
  fclose(maps);
  return n;
}

static void wx_probe(void) {
  if (getenv("CCSHIM_ALLOW_WX")) unsetenv("CCSHIM_ALLOW_WX");
  int before = wx_mappings();
  if (before < 0) {
    printf("no /proc/self/maps: the W^X case is not checked here\n");
    return;
  }
  size_t n = ccshim_prebuilt_entries_free();
  ccshim_adapter** all = calloc(n, sizeof *all);
  CHECK(all != NULL);
  for (size_t i = 0; i < n; i++)
    CHECK_OK(ccshim_wrap((ccshim_legacy_fn)sum_v1, 1, CCSHIM_PLATFORM_HOST, NULL, NULL, &all[i]));
  CHECK_EQ(ccshim_prebuilt_entries_free(), 0);
  ccshim_adapter* extra = NULL;
  ccshim_status st =
      ccshim_wrap((ccshim_legacy_fn)sum_v1, 1, CCSHIM_PLATFORM_HOST, NULL, NULL, &extra);
  if (ccshim_closures_need_wx()) {
    CHECK_EQ(st, CCSHIM_EOVERFLOW);
    CHECK_CONTAINS(ccshim_last_error(), "need writable+executable memory");
    /* Asking was enough to map nothing: the probe ran elsewhere. */
    CHECK_EQ(wx_mappings(), before);
  } else {
    CHECK_OK(st);
    CHECK_EQ(ccshim_adapter_entry(extra), CCSHIM_ENTRY_CLOSURE);
    CHECK_OK(ccshim_adapter_free(extra));
    CHECK_EQ(wx_mappings(), before);
  }
  for (size_t i = 0; i < n; i++) CHECK_OK(ccshim_adapter_free(all[i]));
  free(all);
  cases++;
}

int main(void) {
  CHECK_OK(ccshim_context_new(NULL, &host));
  static const size_t arities[] = {127, 128, 129, 150, 200, 5000};
  for (size_t k = 0; k < sizeof arities / sizeof arities[0]; k++)
    for (int v = 1; v <= 3; v++) {
      many_buffers(arities[k], v, 1);
      many_buffers(arities[k], v, 0);
    }
  many_results(129);
  many_results(5000);
  huge_rank();
  huge_opaque();
  null_api((ccshim_legacy_fn)sum_v1, 1, NULL, CCSHIM_TUPLES_FLAT);
  null_api((ccshim_legacy_fn)fail_v2, 2, NULL, CCSHIM_TUPLES_FLAT);
  null_api((ccshim_legacy_fn)fail_v2, 2, "(f32[1]) -> f32[1]", CCSHIM_TUPLES_FLAT);
  null_api((ccshim_legacy_fn)fail_v2, 2, "(f32[1]) -> f32[1]", CCSHIM_TUPLES_NESTED);
  wx_probe();
  ccshim_context_free(host);
  printf("hostile frames: %d cases, all behaved\n", cases);
  return 0;
}
