/*
 * Adapter lifetimes: 10^4 wrap/free cycles of every form and entry kind (the
 * sanitizer and valgrind runs prove them leak-free); a registered adapter
 * cannot be freed until unregistered; a second free is refused; the prebuilt entries run out
 * cleanly and closures take over only where allowed; and adapters made with the default options
 * leave no writable-and-executable mapping behind.
 */
#include <stdint.h>

#include "adapter_util.h"

static void k1(void* out, const void** in) { *(int32_t*)out = *(const int32_t*)in[0] + 1; }
static void g2(void* stream, void** buffers, const char* opaque, size_t len,
               XlaCustomCallStatus* status) {
  (void)stream;
  (void)buffers;
  (void)opaque;
  (void)len;
  (void)status;
}

/* Counts mappings that are both writable and executable. */
static int wx_mappings(void) {
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) return -1;
  char line[512];
  int n = 0;
  while (fgets(line, sizeof line, maps)) {
    char perms[8];
    if (sscanf(line, "%*s %7s", perms) == 1 && perms[1] == 'w' && perms[2] == 'x') n++;
  }
  fclose(maps);
  return n;
}

static int32_t call_k1(ccshim_adapter* a, ccshim_context* ctx, int32_t x) {
  int32_t y = 0;
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_S32, &x, 0, NULL));
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_S32, &y, 0, NULL));
  CHECK(call_adapter(a, fb, ctx) == NULL);
  ccshim_frame_builder_free(fb);
  return y;
}

static void test_cycles(ccshim_context* ctx) {
  for (int i = 0; i < 10000; i++) {
    ccshim_wrap_options o = CCSHIM_WRAP_OPTIONS_INIT;
    o.entry = i % 3 == 2 ? CCSHIM_ENTRY_CLOSURE : CCSHIM_ENTRY_AUTO;
    o.tuple_operands = i % 5 == 0 && i % 4 != 3 ? CCSHIM_TUPLES_NESTED : CCSHIM_TUPLES_FLAT;
    ccshim_adapter* a;
    if (i % 4 == 3) {
      CHECK_OK(ccshim_wrap((ccshim_legacy_fn)g2, 2, CCSHIM_PLATFORM_CUDA,
                           i % 8 == 3 ? "(f32[2,2]) -> (s8[], token[])" : NULL, &o, &a));
    } else {
      CHECK_OK(
          ccshim_wrap((ccshim_legacy_fn)k1, 1, CCSHIM_PLATFORM_HOST, "(s32[]) -> s32[]", &o, &a));
      if (i % 100 == 0) CHECK_EQ(call_k1(a, ctx, i), i + 1);
    }
    CHECK_OK(ccshim_adapter_free(a));
  }
  CHECK_EQ(ccshim_prebuilt_entries_free(), CCSHIM_PREBUILT_ENTRIES);
}

static void test_registered(ccshim_context* ctx) {
  ccshim_adapter* a;
  CHECK_OK(
      ccshim_wrap((ccshim_legacy_fn)k1, 1, CCSHIM_PLATFORM_HOST, "(s32[]) -> s32[]", NULL, &a));
  CHECK_OK(ccshim_register_handler("life.k1", "cpu", ccshim_adapter_handler(a), 0));
  CHECK_STATUS(ccshim_adapter_free(a), CCSHIM_EBUSY);
  CHECK_CONTAINS(ccshim_last_error(), "ccshim_unregister it first");
  CHECK_EQ(call_k1(a, ctx, 41), 42); /* still whole */
  CHECK_OK(ccshim_unregister("life.k1", "cpu"));
  CHECK_OK(ccshim_adapter_free(a));
}

/* A second free of the same adapter, or a pointer wrap never made, is an
 * error that says so, never a double free (which glibc answers with abort). */
static void test_double_free(void) {
  ccshim_adapter* a;
  CHECK_OK(
      ccshim_wrap((ccshim_legacy_fn)k1, 1, CCSHIM_PLATFORM_HOST, "(s32[]) -> s32[]", NULL, &a));
  ccshim_adapter* b;
  CHECK_OK(ccshim_wrap((ccshim_legacy_fn)k1, 2, CCSHIM_PLATFORM_HOST, NULL, NULL, &b));
  CHECK_OK(ccshim_adapter_free(a));
  CHECK_STATUS(ccshim_adapter_free(a), CCSHIM_EINVAL);
  CHECK_CONTAINS(ccshim_last_error(), "is not a live adapter (freed already");
  int not_an_adapter = 0;
  CHECK_STATUS(ccshim_adapter_free((ccshim_adapter*)&not_an_adapter), CCSHIM_EINVAL);
  CHECK_OK(ccshim_adapter_free(b)); /* the other one is untouched */
  CHECK_STATUS(ccshim_adapter_free(b), CCSHIM_EINVAL);
}

static void test_exhaustion(ccshim_context* ctx) {
  size_t n = CCSHIM_PREBUILT_ENTRIES;
  ccshim_adapter** all = calloc(n, sizeof *all);
  ccshim_wrap_options o = CCSHIM_WRAP_OPTIONS_INIT;
  o.entry = CCSHIM_ENTRY_PREBUILT;
  for (size_t i = 0; i < n; i++)
    CHECK_OK(ccshim_wrap((ccshim_legacy_fn)k1, 1, CCSHIM_PLATFORM_HOST, NULL, &o, &all[i]));
  CHECK_EQ(ccshim_prebuilt_entries_free(), 0);
  /* Every entry point is bound to its own adapter. */
  CHECK_EQ(call_k1(all[0], ctx, 1), 2);
  CHECK_EQ(call_k1(all[n - 1], ctx, 7), 8);
  CHECK(ccshim_adapter_handler(all[0]) != ccshim_adapter_handler(all[n - 1]));

  ccshim_adapter* extra = NULL;
  CHECK_STATUS(ccshim_wrap((ccshim_legacy_fn)k1, 1, CCSHIM_PLATFORM_HOST, NULL, &o, &extra),
               CCSHIM_EOVERFLOW);
  CHECK_CONTAINS(ccshim_last_error(), "all 16384 prebuilt entry points are in use");
  o.entry = CCSHIM_ENTRY_AUTO;
  if (ccshim_closures_need_wx() && getenv("CCSHIM_ALLOW_WX") == NULL) {
    /* Writable+executable memory is a visible choice, never a silent one. */
    CHECK_STATUS(ccshim_wrap((ccshim_legacy_fn)k1, 1, CCSHIM_PLATFORM_HOST, NULL, &o, &extra),
                 CCSHIM_EOVERFLOW);
    CHECK_CONTAINS(ccshim_last_error(), "allow_wx");
    o.allow_wx = 1;
  }
  CHECK_OK(ccshim_wrap((ccshim_legacy_fn)k1, 1, CCSHIM_PLATFORM_HOST, NULL, &o, &extra));
  CHECK_EQ(ccshim_adapter_entry(extra), CCSHIM_ENTRY_CLOSURE);
  CHECK_EQ(call_k1(extra, ctx, 99), 100);
  CHECK_OK(ccshim_adapter_free(extra));
  /* A freed slot is handed out again. */
  CHECK_OK(ccshim_adapter_free(all[5]));
  o.allow_wx = 0;
  CHECK_OK(ccshim_wrap((ccshim_legacy_fn)k1, 1, CCSHIM_PLATFORM_HOST, NULL, &o, &all[5]));
  CHECK_EQ(ccshim_adapter_entry(all[5]), CCSHIM_ENTRY_PREBUILT);
  for (size_t i = 0; i < n; i++) CHECK_OK(ccshim_adapter_free(all[i]));
  free(all);
}

static void test_no_wx_by_default(void) {
  int before = wx_mappings();
  if (before < 0) {
    printf("no /proc/self/maps: the W^X check is skipped\n");
    return;
  }
  ccshim_adapter* many[10000];
  for (int i = 0; i < 10000; i++)
    CHECK_OK(ccshim_wrap((ccshim_legacy_fn)k1, 1, CCSHIM_PLATFORM_HOST, "(s32[]) -> s32[]", NULL,
                         &many[i]));
  int after = wx_mappings();
  CHECK_EQ(after, before);
  CHECK_EQ(before, 0);
  for (int i = 0; i < 10000; i++) CHECK_OK(ccshim_adapter_free(many[i]));
  printf(
      "10^4 adapters with default options: %d writable+executable mappings "
      "(libffi closures here %s one)\n",
      after, ccshim_closures_need_wx() ? "would need" : "would not need");
}

int main(void) {
  ccshim_context* ctx;
  CHECK_OK(ccshim_context_new(NULL, &ctx));
  test_no_wx_by_default(); /* first: before any closure exists */
  test_cycles(ctx);
  test_registered(ctx);
  test_double_free();
  test_exhaustion(ctx);
  ccshim_context_free(ctx);
  printf("adapter lifecycle: ok\n");
  return 0;
}
