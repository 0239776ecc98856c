/*
 * CPU forms v1, v2 and v3 through adapters in the embedded runtime, against
 * the legacy invoker on the same inputs: outputs byte-identical; tuples in
 * the nested and the flat layout; the temp-buffer idiom; one-element tuple
 * results; opaque bytes as a string and as u8/s8 arrays with NULs; failures;
 * the metadata answer; stages; and every malformed frame answered with
 * INVALID_ARGUMENT and the kernel never called.  Each case runs with both
 * entry kinds (prebuilt entry and libffi closure).
 */
#include <math.h>
#include <stdint.h>

#include "adapter_util.h"

/* The examples' kernels (examples/legacy), registered by their macros. */
void add_v1(void* out, const void** in);
void add_v2(void* out, const void** in, XlaCustomCallStatus* status);
void add_v3(void* out, const void** in, const char* opaque, size_t len,
            XlaCustomCallStatus* status);
void tuple_tmp_v2(void* out, const void** in, XlaCustomCallStatus* status);

static ccshim_entry_kind entry;
/* Adapters that XLA (or what looks like it) registered: kept reachable. */
ccshim_adapter* pinned[2];
static ccshim_context* ctx;
static int calls;

static ccshim_adapter* wrap(ccshim_legacy_fn fn, int version, const char* sig,
                            const ccshim_wrap_options* opts) {
  ccshim_wrap_options o = CCSHIM_WRAP_OPTIONS_INIT;
  if (opts) o = *opts;
  o.entry = entry;
  ccshim_adapter* a = NULL;
  CHECK_OK(ccshim_wrap(fn, version, CCSHIM_PLATFORM_HOST, sig, &o, &a));
  CHECK_EQ(ccshim_adapter_entry(a), entry);
  return a;
}

/* --- The documentation's kernel in three forms, both sides --------------- */

static void test_forms_against_invoker(void) {
  const char* text = "(f32[128], f32[2048]) -> f32[2048]";
  ccshim_signature* sig = parse_sig(text);
  struct {
    ccshim_legacy_fn fn;
    int version;
  } forms[] = {
      {(ccshim_legacy_fn)add_v1, 1}, {(ccshim_legacy_fn)add_v2, 2}, {(ccshim_legacy_fn)add_v3, 3}};
  const struct {
    float scale;
    int32_t count;
  } desc = {-2.0f, 1999};
  for (int f = 0; f < 3; f++) {
    ccshim_adapter* a = wrap(forms[f].fn, forms[f].version, text, NULL);
    for (uint64_t seed = 1; seed <= 5; seed++) {
      float b[128], c[2048], typed[2048], legacy[2048];
      fill_floats(b, 128, seed);
      fill_floats(c, 2048, seed + 100);
      memset(typed, 0x11, sizeof typed);
      memset(legacy, 0x22, sizeof legacy);
      void* args[2] = {b, c};
      void* rt[1] = {typed};
      void* rl[1] = {legacy};
      ccshim_frame_builder* fb = frame_for(sig, args, rt);
      if (forms[f].version == 3)
        CHECK_OK(ccshim_frame_builder_add_string(fb, "opaque", (const char*)&desc, sizeof desc));
      CHECK(call_adapter(a, fb, ctx) == NULL);
      ccshim_legacy_outcome o =
          call_legacy(forms[f].fn, forms[f].version, CCSHIM_PLATFORM_HOST, sig, CCSHIM_TUPLES_FLAT,
                      args, rl, (const char*)&desc, sizeof desc, NULL);
      CHECK(!o.failed);
      CHECK_MEM_EQ(typed, legacy, sizeof typed);
      /* and both are right */
      float scale = forms[f].version == 3 ? desc.scale : 1.0f;
      int count = forms[f].version == 3 ? desc.count : 2048;
      for (int i = 0; i < count; i++) CHECK(typed[i] == scale * (b[i % 128] + c[i]));
      ccshim_frame_builder_free(fb);
    }
    CHECK_OK(ccshim_adapter_free(a));
  }
  ccshim_signature_free(sig);
}

/* --- Tuples --------------------------------------------------------------- */

/* ((f32[2], (f32[3], f32[4]), f32[5])) -> (f32[1], f32[1]) in the classic
 * nested layout: in[0] is a table {leaf, {leaf, leaf}, leaf}. */
static void nested_sum(void* out, const void** in, XlaCustomCallStatus* status) {
  calls++;
  void* const* t = (void* const*)in[0];
  void* const* inner = (void* const*)t[1];
  const float* parts[4] = {t[0], inner[0], inner[1], t[2]};
  const int sizes[4] = {2, 3, 4, 5};
  float sum = 0, weighted = 0;
  for (int p = 0; p < 4; p++)
    for (int i = 0; i < sizes[p]; i++) {
      sum += parts[p][i];
      weighted += (float)(p + 1) * parts[p][i];
    }
  void** outs = out;
  *(float*)outs[0] = sum;
  *(float*)outs[1] = weighted;
  XlaCustomCallStatusSetSuccess(status);
}

/* The same computation over flat leaves: in[0..3]. */
static void flat_sum(void* out, const void** in, XlaCustomCallStatus* status) {
  calls++;
  const int sizes[4] = {2, 3, 4, 5};
  float sum = 0, weighted = 0;
  for (int p = 0; p < 4; p++)
    for (int i = 0; i < sizes[p]; i++) {
      sum += ((const float*)in[p])[i];
      weighted += (float)(p + 1) * ((const float*)in[p])[i];
    }
  void** outs = out;
  *(float*)outs[0] = sum;
  *(float*)outs[1] = weighted;
  (void)status;
}

static void test_tuples(void) {
  const char* text = "((f32[2], (f32[3], f32[4]), f32[5])) -> (f32[1], f32[1])";
  ccshim_signature* sig = parse_sig(text);
  float leaves[14];
  for (int i = 0; i < 14; i++) leaves[i] = (float)(i + 1);
  void* args[4] = {leaves, leaves + 2, leaves + 5, leaves + 9};
  const float want_sum = 105, want_weighted = 1 * 3 + 2 * 12 + 3 * 30 + 4 * 60;
  for (int layout = 0; layout < 2; layout++) {
    ccshim_wrap_options o = CCSHIM_WRAP_OPTIONS_INIT;
    o.tuple_operands = layout ? CCSHIM_TUPLES_NESTED : CCSHIM_TUPLES_FLAT;
    ccshim_legacy_fn fn = layout ? (ccshim_legacy_fn)nested_sum : (ccshim_legacy_fn)flat_sum;
    ccshim_adapter* a = wrap(fn, 2, text, &o);
    float t0 = 0, t1 = 0, l0 = 0, l1 = 0;
    void* rt[2] = {&t0, &t1};
    void* rl[2] = {&l0, &l1};
    ccshim_frame_builder* fb = frame_for(sig, args, rt);
    CHECK(call_adapter(a, fb, ctx) == NULL);
    ccshim_legacy_outcome lo =
        call_legacy(fn, 2, CCSHIM_PLATFORM_HOST, sig, o.tuple_operands, args, rl, NULL, 0, NULL);
    CHECK(!lo.failed);
    CHECK(t0 == want_sum && t1 == want_weighted);
    CHECK(l0 == t0 && l1 == t1);
    ccshim_frame_builder_free(fb);
    CHECK_OK(ccshim_adapter_free(a));
  }
  ccshim_signature_free(sig);

  /* The temp-buffer idiom: (result, scratch), the scratch ignored. */
  text = "(f32[128], f32[2048]) -> (f32[2048], f32[2048])";
  sig = parse_sig(text);
  ccshim_adapter* a = wrap((ccshim_legacy_fn)tuple_tmp_v2, 2, text, NULL);
  static float b[128], c[2048], r[2048], s[2048], lr[2048], ls[2048];
  fill_floats(b, 128, 7);
  fill_floats(c, 2048, 8);
  void* args2[2] = {b, c};
  void* rt[2] = {r, s};
  void* rl[2] = {lr, ls};
  ccshim_frame_builder* fb = frame_for(sig, args2, rt);
  CHECK(call_adapter(a, fb, ctx) == NULL);
  ccshim_legacy_outcome lo = call_legacy((ccshim_legacy_fn)tuple_tmp_v2, 2, CCSHIM_PLATFORM_HOST,
                                         sig, CCSHIM_TUPLES_FLAT, args2, rl, NULL, 0, NULL);
  CHECK(!lo.failed);
  CHECK_MEM_EQ(r, lr, sizeof r);
  CHECK_MEM_EQ(s, ls, sizeof s);
  for (int i = 0; i < 2048; i++) CHECK(r[i] == 2.0f * b[i % 128] + c[i]);
  ccshim_frame_builder_free(fb);
  CHECK_OK(ccshim_adapter_free(a));
  ccshim_signature_free(sig);
}

/* A one-element tuple result stays a table; a single result is the buffer. */
static void* seen_out;
static void record_out(void* out, const void** in) {
  calls++;
  seen_out = out;
  (void)in;
}

static void test_out_convention(void) {
  float x = 1, y = 0;
  void* args[1] = {&x};
  void* rets[1] = {&y};
  ccshim_signature* one = parse_sig("(f32[]) -> (f32[])");
  ccshim_adapter* a = wrap((ccshim_legacy_fn)record_out, 1, "(f32[]) -> (f32[])", NULL);
  ccshim_frame_builder* fb = frame_for(one, args, rets);
  CHECK(call_adapter(a, fb, ctx) == NULL);
  CHECK(seen_out != &y);
  CHECK_PTR_EQ(((void**)seen_out)[0], &y);
  ccshim_frame_builder_free(fb);
  CHECK_OK(ccshim_adapter_free(a));
  ccshim_signature_free(one);

  ccshim_signature* single = parse_sig("(f32[]) -> f32[]");
  a = wrap((ccshim_legacy_fn)record_out, 1, "(f32[]) -> f32[]", NULL);
  fb = frame_for(single, args, rets);
  CHECK(call_adapter(a, fb, ctx) == NULL);
  CHECK_PTR_EQ(seen_out, &y);
  ccshim_frame_builder_free(fb);
  CHECK_OK(ccshim_adapter_free(a));

  /* Without a signature: a table exactly when there is not one result, as
   * JAX emits calls. */
  a = wrap((ccshim_legacy_fn)record_out, 1, NULL, NULL);
  fb = frame_for(single, args, rets);
  CHECK(call_adapter(a, fb, ctx) == NULL);
  CHECK_PTR_EQ(seen_out, &y);
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F32, &x, 0, NULL));
  CHECK(call_adapter(a, fb, ctx) == NULL);
  CHECK_PTR_EQ(((void**)seen_out)[0], &y);
  CHECK_PTR_EQ(((void**)seen_out)[1], &x);
  ccshim_frame_builder_free(fb);
  CHECK_OK(ccshim_adapter_free(a));
  ccshim_signature_free(single);
}

/* --- Opaque ---------------------------------------------------------------- */

/* v3: copies what it was given into out: u8[8192] = len (8 bytes), the
 * bytes, then whether opaque[len] was a NUL. */
static void echo_opaque(void* out, const void** in, const char* opaque, size_t len,
                        XlaCustomCallStatus* status) {
  calls++;
  (void)in;
  unsigned char* o = out;
  memset(o, 0, 8192);
  if (len > 8000) {
    XlaCustomCallStatusSetFailure(status, "too long", 8);
    return;
  }
  memcpy(o, &len, 8);
  memcpy(o + 8, opaque, len);
  o[8 + len] = opaque[len] == '\0' ? 0xEE : 0xBA;
}

static void check_opaque_run(ccshim_adapter* a, const char* attr, int kind, const char* bytes,
                             size_t len, const char* legacy_bytes) {
  static unsigned char typed[8192], legacy[8192];
  void* rt[1] = {typed};
  void* rl[1] = {legacy};
  ccshim_signature* sig = parse_sig("() -> u8[8192]");
  ccshim_frame_builder* fb = frame_for(sig, NULL, rt);
  if (kind == 0) CHECK_OK(ccshim_frame_builder_add_string(fb, attr, bytes, len));
  if (kind == 1)
    CHECK_OK(ccshim_frame_builder_add_array(fb, attr, XLA_FFI_DataType_U8, bytes, len));
  if (kind == 2)
    CHECK_OK(ccshim_frame_builder_add_array(fb, attr, XLA_FFI_DataType_S8, bytes, len));
  int32_t unrelated = 5;
  CHECK_OK(ccshim_frame_builder_add_scalar(fb, "zzz_other", XLA_FFI_DataType_S32, &unrelated));
  CHECK(call_adapter(a, fb, ctx) == NULL);
  size_t got_len;
  memcpy(&got_len, typed, 8);
  size_t want_len = kind < 0 ? 0 : len;
  CHECK_EQ(got_len, want_len);
  CHECK_MEM_EQ(typed + 8, bytes, want_len);
  CHECK_EQ(typed[8 + want_len], 0xEE); /* a NUL after the last byte */
  ccshim_legacy_outcome lo =
      call_legacy((ccshim_legacy_fn)echo_opaque, 3, CCSHIM_PLATFORM_HOST, sig, CCSHIM_TUPLES_FLAT,
                  NULL, rl, legacy_bytes, want_len, NULL);
  CHECK(!lo.failed);
  CHECK_MEM_EQ(typed, legacy, sizeof typed);
  ccshim_frame_builder_free(fb);
  ccshim_signature_free(sig);
}

static XLA_FFI_Error* call_with_attr(ccshim_adapter* a, const char* sig_text, int kind) {
  static unsigned char out[8192];
  void* rets[1] = {out};
  ccshim_signature* sig = parse_sig(sig_text);
  ccshim_frame_builder* fb = frame_for(sig, NULL, rets);
  int32_t i = 3;
  float f[2] = {1, 2};
  if (kind == 0) CHECK_OK(ccshim_frame_builder_add_scalar(fb, "opaque", XLA_FFI_DataType_S32, &i));
  if (kind == 1) CHECK_OK(ccshim_frame_builder_add_array(fb, "opaque", XLA_FFI_DataType_F32, f, 2));
  if (kind == 2) {
    CHECK_OK(ccshim_frame_builder_begin_dict(fb, "opaque"));
    CHECK_OK(ccshim_frame_builder_end_dict(fb));
  }
  XLA_FFI_Error* err = call_adapter(a, fb, ctx);
  ccshim_frame_builder_free(fb);
  ccshim_signature_free(sig);
  return err;
}

static void test_opaque(void) {
  ccshim_adapter* a = wrap((ccshim_legacy_fn)echo_opaque, 3, "() -> u8[8192]", NULL);
  static const char with_nuls[] = {'d', 'e', 's', 'c', 0, 1, 0, 0, (char)0xff, 0};
  check_opaque_run(a, "opaque", 0, with_nuls, sizeof with_nuls, with_nuls);
  check_opaque_run(a, "opaque", 1, with_nuls, sizeof with_nuls, with_nuls);
  check_opaque_run(a, "opaque", 2, with_nuls, sizeof with_nuls, with_nuls);
  check_opaque_run(a, "opaque", 0, "", 0, "");
  check_opaque_run(a, "opaque", -1, "", 0, ""); /* absent: empty, as XLA passes it */
  /* Every length across the short-copy and stack-copy boundaries. */
  static char sweep[300];
  for (size_t i = 0; i < sizeof sweep; i++) sweep[i] = (char)(i * 37 % 251);
  for (size_t len = 0; len <= sizeof sweep; len++) {
    check_opaque_run(a, "opaque", (int)(len % 2), sweep, len, sweep);
  }
  /* Larger than the stack copy: the per-thread buffer path. */
  static char big[5000];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (char)(i % 7 == 0 ? 0 : i);
  check_opaque_run(a, "opaque", 1, big, sizeof big, big);
  check_opaque_run(a, "opaque", 0, big, sizeof big, big);

  /* A wrong attribute type is INVALID_ARGUMENT, the kernel not called. */
  calls = 0;
  expect_ffi_error(call_with_attr(a, "() -> u8[8192]", 0), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "attribute 'opaque': expected a string or a u8/s8 array, got a scalar");
  expect_ffi_error(call_with_attr(a, "() -> u8[8192]", 1), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "got an array of f32");
  expect_ffi_error(call_with_attr(a, "() -> u8[8192]", 2), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "got a dictionary");
  CHECK_EQ(calls, 0);
  CHECK_OK(ccshim_adapter_free(a));

  /* Another attribute name, chosen at wrap time. */
  ccshim_wrap_options o = CCSHIM_WRAP_OPTIONS_INIT;
  o.opaque_attr = "backend_config";
  a = wrap((ccshim_legacy_fn)echo_opaque, 3, "() -> u8[8192]", &o);
  check_opaque_run(a, "backend_config", 0, "xyz", 3, "xyz");
  CHECK_OK(ccshim_adapter_free(a));

  /* Names of every length through the short compare, next to a decoy that
   * differs only in its last byte. */
  for (size_t n = 1; n <= 20; n++) {
    char name[24], decoy[24];
    memcpy(name, "abcdefghijklmnopqrst", n);
    name[n] = '\0';
    memcpy(decoy, name, n + 1);
    decoy[n - 1] = 'Z';
    o = (ccshim_wrap_options)CCSHIM_WRAP_OPTIONS_INIT;
    o.opaque_attr = name;
    a = wrap((ccshim_legacy_fn)echo_opaque, 3, "() -> u8[8192]", &o);
    static unsigned char out[8192];
    void* rets[1] = {out};
    ccshim_signature* sig = parse_sig("() -> u8[8192]");
    ccshim_frame_builder* fb = frame_for(sig, NULL, rets);
    CHECK_OK(ccshim_frame_builder_add_string(fb, decoy, "decoy", 5));
    CHECK_OK(ccshim_frame_builder_add_string(fb, name, "right", 5));
    CHECK(call_adapter(a, fb, ctx) == NULL);
    CHECK_MEM_EQ(out + 8, "right", 5);
    ccshim_frame_builder_free(fb);
    ccshim_signature_free(sig);
    CHECK_OK(ccshim_adapter_free(a));
  }

  /* CPU v1/v2 kernels never see the opaque, so never look at it. */
  a = wrap((ccshim_legacy_fn)record_out, 1, "() -> u8[8192]", NULL);
  CHECK(call_with_attr(a, "() -> u8[8192]", 0) == NULL);
  CHECK_OK(ccshim_adapter_free(a));
}

/* --- Failures ---------------------------------------------------------------- */

static const char* fail_text;
static size_t fail_len;
static int fail_then_succeed;

static void failing_v2(void* out, const void** in, XlaCustomCallStatus* status) {
  calls++;
  (void)out;
  (void)in;
  XlaCustomCallStatusSetFailure(status, fail_text, fail_len);
  if (fail_then_succeed) XlaCustomCallStatusSetSuccess(status);
}

static void test_failures(void) {
  ccshim_signature* sig = parse_sig("() -> f32[]");
  float y;
  void* rets[1] = {&y};
  ccshim_adapter* a = wrap((ccshim_legacy_fn)failing_v2, 2, "() -> f32[]", NULL);
  static char long_text[400];
  memset(long_text, 'L', sizeof long_text - 1);
  char unterminated[5] = {'a', 'b', 'c', 'd', 'e'};
  struct {
    const char* text;
    size_t len;
    const char* want;
  } cases[] = {{"kernel says no", 14, "kernel says no"},     {"kernel says no", 6, "kernel"},
               {"stops\0at the NUL", 16, "stops"},           {unterminated, 5, "abcde"},
               {long_text, sizeof long_text - 1, long_text}, {"", 0, ""}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fail_text = cases[i].text;
    fail_len = cases[i].len;
    ccshim_frame_builder* fb = frame_for(sig, NULL, rets);
    XLA_FFI_Error* err = call_adapter(a, fb, ctx);
    CHECK(err != NULL);
    CHECK_EQ(ccshim_error_code(err), XLA_FFI_Error_Code_INTERNAL);
    CHECK_STR_EQ(ccshim_error_message(err), cases[i].want);
    ccshim_legacy_outcome lo = call_legacy((ccshim_legacy_fn)failing_v2, 2, CCSHIM_PLATFORM_HOST,
                                           sig, CCSHIM_TUPLES_FLAT, NULL, rets, NULL, 0, NULL);
    CHECK(lo.failed);
    CHECK_EQ(lo.code, 13);
    CHECK_STR_EQ(lo.message, ccshim_error_message(err));
    ccshim_legacy_outcome_reset(&lo);
    ccshim_error_free(err);
    ccshim_frame_builder_free(fb);
  }
  fail_then_succeed = 1;
  ccshim_frame_builder* fb = frame_for(sig, NULL, rets);
  CHECK(call_adapter(a, fb, ctx) == NULL);
  fail_then_succeed = 0;
  ccshim_frame_builder_free(fb);
  CHECK_OK(ccshim_adapter_free(a));
  ccshim_signature_free(sig);
}

/* --- Metadata and stages ----------------------------------------------------- */

static XLA_FFI_Error* metadata_call(XLA_FFI_Handler* h, const XLA_FFI_Api* api, size_t ext_size,
                                    XLA_FFI_Metadata* md) {
  XLA_FFI_Metadata_Extension ext;
  memset(&ext, 0, sizeof ext);
  ext.extension_base.struct_size = ext_size;
  ext.extension_base.type = XLA_FFI_Extension_Metadata;
  ext.metadata = md;
  XLA_FFI_CallFrame f;
  memset(&f, 0, sizeof f);
  f.struct_size = XLA_FFI_CallFrame_STRUCT_SIZE;
  f.extension_start = &ext.extension_base;
  f.api = api;
  f.stage = XLA_FFI_ExecutionStage_EXECUTE;
  f.args.struct_size = XLA_FFI_Args_STRUCT_SIZE;
  f.rets.struct_size = XLA_FFI_Rets_STRUCT_SIZE;
  f.attrs.struct_size = XLA_FFI_Attrs_STRUCT_SIZE;
  return h(&f);
}

static void test_metadata_and_stages(void) {
  calls = 0;
  ccshim_adapter* a = wrap((ccshim_legacy_fn)record_out, 1, "(f32[]) -> f32[]", NULL);
  XLA_FFI_Metadata md;
  CHECK_OK(ccshim_query_metadata(ccshim_adapter_handler(a), &md));
  CHECK_EQ(md.api_version.struct_size, 24);
  CHECK_EQ(md.api_version.major_version, 0);
  CHECK_EQ(md.api_version.minor_version, 1);
  CHECK_EQ(md.traits, 0);
  /* A malformed query is an error when one can be made, and no crash. */
  expect_ffi_error(metadata_call(ccshim_adapter_handler(a), ccshim_ffi_api(), 8, &md),
                   XLA_FFI_Error_Code_INVALID_ARGUMENT, "malformed metadata query");
  CHECK_EQ(calls, 0);
  CHECK_OK(ccshim_adapter_free(a)); /* only our own runtime asked so far */

  /* JAX <= 0.8 sends api NULL: answered all the same, nothing touched.  A
   * query from any runtime but the embedded one means XLA registered the
   * handler, so the adapter may no longer be freed.  (It stays reachable
   * here, as it would in XLA's registry.) */
  a = wrap((ccshim_legacy_fn)record_out, 1, "(f32[]) -> f32[]", NULL);
  pinned[entry - 1] = a;
  memset(&md, 0, sizeof md);
  md.struct_size = XLA_FFI_Metadata_STRUCT_SIZE;
  CHECK(metadata_call(ccshim_adapter_handler(a), NULL, 32, &md) == NULL);
  CHECK_EQ(md.api_version.minor_version, 1);
  CHECK(metadata_call(ccshim_adapter_handler(a), NULL, 8, &md) == NULL);
  CHECK_STATUS(ccshim_adapter_free(a), CCSHIM_EBUSY);
  CHECK_CONTAINS(ccshim_last_error(), "registered with XLA, which has no unregister");
  CHECK_EQ(calls, 0);
  a = wrap((ccshim_legacy_fn)record_out, 1, "(f32[]) -> f32[]", NULL);

  /* Stages other than execute do nothing. */
  float x = 1, y = 0;
  void* args[1] = {&x};
  void* rets[1] = {&y};
  ccshim_signature* sig = parse_sig("(f32[]) -> f32[]");
  ccshim_frame_builder* fb = frame_for(sig, args, rets);
  for (int stage = 0; stage <= 4; stage++) {
    if (stage == XLA_FFI_ExecutionStage_EXECUTE) continue;
    CHECK_OK(ccshim_invoke_handler(ccshim_adapter_handler(a), ctx, (XLA_FFI_ExecutionStage)stage,
                                   fb, NULL));
  }
  CHECK_EQ(calls, 0);
  CHECK(call_adapter(a, fb, ctx) == NULL);
  CHECK_EQ(calls, 1);
  ccshim_frame_builder_free(fb);
  CHECK_OK(ccshim_adapter_free(a));

  /* The reported version and traits are options. */
  ccshim_wrap_options o = CCSHIM_WRAP_OPTIONS_INIT;
  o.ffi_minor = 3;
  o.traits = XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE;
  a = wrap((ccshim_legacy_fn)record_out, 1, NULL, &o);
  CHECK_OK(ccshim_query_metadata(ccshim_adapter_handler(a), &md));
  CHECK_EQ(md.api_version.minor_version, 3);
  CHECK_EQ(md.traits, 1);
  CHECK_OK(ccshim_adapter_free(a));
  ccshim_signature_free(sig);
}

/* --- Malformed frames ---------------------------------------------------------- */

static void test_malformed_frames(void) {
  const char* text = "(f32[128], f32[2048]) -> f32[2048]";
  ccshim_adapter* a = wrap((ccshim_legacy_fn)add_v2, 2, text, NULL);
  static float b[128], c[2048], c_small[1024], out[2048];
  int32_t ints[2048];
  int64_t d128 = 128, d2048 = 2048, d1024 = 1024, d2[2] = {2, 1024};
  calls = 0;
  struct {
    int nargs;
    XLA_FFI_DataType t1;
    void* data1;
    int64_t rank1;
    const int64_t* dims1;
    const char* want;
  } cases[] = {
      {1, XLA_FFI_DataType_F32, c, 1, &d2048,
       "wrong number of buffers: expected 2 argument(s) and 1 result(s) for "
       "(f32[128], f32[2048]) -> f32[2048], got 1 and 1"},
      {3, XLA_FFI_DataType_F32, c, 1, &d2048, "got 3 and 1"},
      {2, XLA_FFI_DataType_S32, ints, 1, &d2048, "arg 1: expected f32[2048], got s32[2048]"},
      {2, XLA_FFI_DataType_F32, c_small, 1, &d1024, "arg 1: expected f32[2048], got f32[1024]"},
      {2, XLA_FFI_DataType_F32, c, 2, d2, "arg 1: expected f32[2048], got f32[2,1024]"},
      {2, XLA_FFI_DataType_F32, NULL, 1, &d2048,
       "arg 1: data is NULL for f32[2048]; expected a buffer address"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ccshim_frame_builder* fb;
    CHECK_OK(ccshim_frame_builder_new(&fb));
    CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, b, 1, &d128));
    if (cases[i].nargs >= 2)
      CHECK_OK(ccshim_frame_builder_add_arg(fb, cases[i].t1, cases[i].data1, cases[i].rank1,
                                            cases[i].dims1));
    if (cases[i].nargs >= 3)
      CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, c, 1, &d2048));
    CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F32, out, 1, &d2048));
    expect_ffi_error(call_adapter(a, fb, ctx), XLA_FFI_Error_Code_INVALID_ARGUMENT, cases[i].want);
    ccshim_frame_builder_free(fb);
  }
  /* A wrong result is named as a result. */
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, b, 1, &d128));
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, c, 1, &d2048));
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F64, out, 1, &d1024));
  expect_ffi_error(call_adapter(a, fb, ctx), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "ret 0: expected f32[2048], got f64[1024]");

  /* Hand-damaged frames: sizes, NULL arrays and buffer pointers. */
  XLA_FFI_CallFrame f;
  CHECK_OK(
      ccshim_frame_builder_build(fb, ccshim_ffi_api(), ctx, XLA_FFI_ExecutionStage_EXECUTE, &f));
  XLA_FFI_Handler* h = ccshim_adapter_handler(a);
  XLA_FFI_CallFrame bad = f;
  bad.struct_size = 160;
  expect_ffi_error(h(&bad), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "Unexpected XLA_FFI_CallFrame size: expected 168, got 160");
  bad = f;
  bad.args.args = NULL;
  expect_ffi_error(h(&bad), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "the argument array is NULL with 2 entries");
  void* holes[2] = {f.args.args[0], NULL};
  bad = f;
  bad.args.args = holes;
  expect_ffi_error(h(&bad), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "arg 1: the buffer pointer is NULL");
  bad = f;
  bad.args.size = -1;
  expect_ffi_error(h(&bad), XLA_FFI_Error_Code_INVALID_ARGUMENT, "wrong number of buffers");
  XLA_FFI_Buffer rank_no_dims = *(XLA_FFI_Buffer*)f.args.args[1];
  rank_no_dims.dims = NULL;
  void* with_null_dims[2] = {f.args.args[0], &rank_no_dims};
  bad = f;
  bad.args.args = with_null_dims;
  expect_ffi_error(h(&bad), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                   "arg 1: expected f32[2048], got rank 1 with NULL dims");
  bad = f;
  bad.api = NULL; /* refused through ccshim's own table, never a silent success */
  expect_ffi_error(h(&bad), XLA_FFI_Error_Code_INVALID_ARGUMENT, "the call frame's api is NULL");
  CHECK(h(NULL) == NULL);
  CHECK_EQ(calls, 0);
  ccshim_frame_builder_free(fb);
  CHECK_OK(ccshim_adapter_free(a));

  /* NULL data is allowed where there is nothing to address: tokens and
   * zero-element buffers. */
  a = wrap((ccshim_legacy_fn)record_out, 1, "(token[], f32[0,4]) -> f32[]", NULL);
  float y;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  int64_t empty[2] = {0, 4};
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_TOKEN, NULL, 0, NULL));
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F32, NULL, 2, empty));
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F32, &y, 0, NULL));
  CHECK(call_adapter(a, fb, ctx) == NULL);
  CHECK_EQ(calls, 1);
  ccshim_frame_builder_free(fb);
  CHECK_OK(ccshim_adapter_free(a));
}

/* --- Wrapping refusals ------------------------------------------------------------ */

static void test_wrap_refusals(void) {
  ccshim_adapter* a = (ccshim_adapter*)1;
  CHECK_STATUS(ccshim_wrap((ccshim_legacy_fn)add_v1, 4, CCSHIM_PLATFORM_HOST, NULL, NULL, &a),
               CCSHIM_EINVAL);
  CHECK_CONTAINS(ccshim_last_error(), "API version 4 is not a legacy form");
  CHECK(a == NULL);
  CHECK_STATUS(ccshim_wrap((ccshim_legacy_fn)add_v1, 0, CCSHIM_PLATFORM_HOST, NULL, NULL, &a),
               CCSHIM_EINVAL);
  CHECK_STATUS(ccshim_wrap(NULL, 1, CCSHIM_PLATFORM_HOST, NULL, NULL, &a), CCSHIM_EINVAL);
  CHECK_CONTAINS(ccshim_last_error(), "the kernel is NULL");
  CHECK_STATUS(ccshim_wrap((ccshim_legacy_fn)add_v1, 1, (ccshim_platform)7, NULL, NULL, &a),
               CCSHIM_EINVAL);
  CHECK_STATUS(ccshim_wrap((ccshim_legacy_fn)add_v1, 1, CCSHIM_PLATFORM_HOST,
                           "(f32[128], f32[2048) -> f32[2048]", NULL, &a),
               CCSHIM_ESIGNATURE);
  CHECK_CONTAINS(ccshim_last_error(), "signature column 20");
  CHECK(a == NULL);
  ccshim_wrap_options o = CCSHIM_WRAP_OPTIONS_INIT;
  o.tuple_operands = CCSHIM_TUPLES_NESTED;
  CHECK_STATUS(ccshim_wrap((ccshim_legacy_fn)add_v1, 1, CCSHIM_PLATFORM_HOST, NULL, &o, &a),
               CCSHIM_EINVAL);
  CHECK_CONTAINS(ccshim_last_error(), "nested tuple layout needs a signature");
  CHECK_STATUS(
      ccshim_wrap((ccshim_legacy_fn)add_v1, 1, CCSHIM_PLATFORM_CUDA, "(f32[1]) -> f32[1]", &o, &a),
      CCSHIM_EINVAL);
  memset(&o, 0, sizeof o);
  o.opaque_attr = "";
  CHECK_STATUS(ccshim_wrap((ccshim_legacy_fn)add_v3, 3, CCSHIM_PLATFORM_HOST, NULL, &o, &a),
               CCSHIM_EINVAL);
  CHECK_STATUS(ccshim_wrap((ccshim_legacy_fn)add_v1, 1, CCSHIM_PLATFORM_HOST, NULL, NULL, NULL),
               CCSHIM_EINVAL);
  CHECK_STATUS(ccshim_wrap_registered("add_v2", "host", 2, NULL, NULL, &a), CCSHIM_ENOENT);
  CHECK_CONTAINS(ccshim_last_error(), "case-sensitive");
  CHECK_STATUS(ccshim_wrap_registered("add_v2", "tpu", 2, NULL, NULL, &a), CCSHIM_EINVAL);
  CHECK_OK(ccshim_wrap_registered("add_v2", "Host", 2, NULL, NULL, &a));
  CHECK_OK(ccshim_adapter_free(a));
}

int main(void) {
  CHECK_OK(ccshim_context_new(NULL, &ctx));
  for (int e = CCSHIM_ENTRY_PREBUILT; e <= CCSHIM_ENTRY_CLOSURE; e++) {
    entry = (ccshim_entry_kind)e;
    test_forms_against_invoker();
    test_tuples();
    test_out_convention();
    test_opaque();
    test_failures();
    test_metadata_and_stages();
    test_malformed_frames();
  }
  test_wrap_refusals();
  ccshim_context_free(ctx);
  printf("adapters, CPU forms: ok (prebuilt entries and libffi closures)\n");
  return 0;
}
