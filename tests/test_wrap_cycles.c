/*
 * N wrap/free cycles (default 10^5) of every form and both entry kinds,
 * some with a signature, one call in a hundred.  Run by ctest under valgrind
 * memcheck, which must find no leak and no error (test_valgrind_wrap_free).
 */
#include <stdint.h>

#include "adapter_util.h"

static void k(void* out, const void** in, XlaCustomCallStatus* s) {
  *(int32_t*)out = *(const int32_t*)in[0] + 1;
  (void)s;
}
static void g(void* stream, void** b, const char* o, size_t n, XlaCustomCallStatus* s) {
  (void)stream;
  (void)b;
  (void)o;
  (void)n;
  (void)s;
}

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 100000;
  ccshim_context* ctx;
  CHECK_OK(ccshim_context_new(NULL, &ctx));
  for (long i = 0; i < n; i++) {
    ccshim_wrap_options o = CCSHIM_WRAP_OPTIONS_INIT;
    o.entry = i % 7 == 3 ? CCSHIM_ENTRY_CLOSURE : CCSHIM_ENTRY_AUTO;
    ccshim_adapter* a;
    if (i % 5 == 4) {
      CHECK_OK(ccshim_wrap((ccshim_legacy_fn)g, 2, CCSHIM_PLATFORM_ROCM,
                           i % 2 ? "(f32[2], token[]) -> (f32[2])" : NULL, &o, &a));
    } else {
      CHECK_OK(ccshim_wrap((ccshim_legacy_fn)k, 2 + (int)(i % 2), CCSHIM_PLATFORM_HOST,
                           i % 3 ? "(s32[]) -> s32[]" : NULL, &o, &a));
      if (i % 100 == 0) {
        int32_t x = (int32_t)i, y = 0;
        ccshim_frame_builder* fb;
        CHECK_OK(ccshim_frame_builder_new(&fb));
        CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_S32, &x, 0, NULL));
        CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_S32, &y, 0, NULL));
        CHECK(call_adapter(a, fb, ctx) == NULL);
        CHECK_EQ(y, x + 1);
        ccshim_frame_builder_free(fb);
      }
    }
    CHECK_OK(ccshim_adapter_free(a));
  }
  ccshim_context_free(ctx);
  printf("%ld wrap/free cycles\n", n);
  return 0;
}
