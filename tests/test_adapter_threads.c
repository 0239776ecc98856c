/*
 * Four threads calling one adapter 10^5 times each, every result checked:
 * the hot path shares the adapter's plan read-only and takes no lock.  Run
 * for both entry kinds; the sanitizer builds run it under ThreadSanitizer.
 */
#include <pthread.h>
#include <stdint.h>

#include "adapter_util.h"

enum { THREADS = 4, CALLS = 100000 };

/* v3: out = in * k + opaque's first byte, with a failure for odd k. */
static void axpb_v3(void* out, const void** in, const char* opaque, size_t len,
                    XlaCustomCallStatus* status) {
  int64_t k = *(const int64_t*)in[1];
  if (len != 1) {
    XlaCustomCallStatusSetFailure(status, "need one opaque byte", 20);
    return;
  }
  if (k % 1000 == 999) {
    XlaCustomCallStatusSetFailure(status, "k ends in 999", 13);
    return;
  }
  *(int64_t*)out = *(const int64_t*)in[0] * k + (unsigned char)opaque[0];
}

typedef struct worker {
  const ccshim_adapter* adapter;
  int id;
  long wrong, failed;
} worker;

static void* work(void* p) {
  worker* w = p;
  ccshim_context* ctx;
  CHECK_OK(ccshim_context_new(NULL, &ctx));
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  int64_t x = w->id + 1, k = 0, y = 0;
  char byte = (char)(10 * w->id);
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_S64, &x, 0, NULL));
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_S64, &k, 0, NULL));
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_S64, &y, 0, NULL));
  CHECK_OK(ccshim_frame_builder_add_string(fb, "opaque", &byte, 1));
  XLA_FFI_CallFrame frame;
  CHECK_OK(ccshim_frame_builder_build(fb, ccshim_ffi_api(), ctx, XLA_FFI_ExecutionStage_EXECUTE,
                                      &frame));
  XLA_FFI_Handler* h = ccshim_adapter_handler(w->adapter);
  for (k = 0; k < CALLS; k++) {
    y = -1;
    XLA_FFI_Error* err = h(&frame);
    if (k % 1000 == 999) {
      if (err == NULL || strcmp(ccshim_error_message(err), "k ends in 999") != 0) w->wrong++;
      w->failed += err != NULL;
      ccshim_error_free(err);
    } else if (err != NULL || y != x * k + (unsigned char)byte) {
      w->wrong++;
      ccshim_error_free(err);
    }
  }
  ccshim_frame_builder_free(fb);
  ccshim_context_free(ctx);
  return NULL;
}

int main(void) {
  for (int e = CCSHIM_ENTRY_PREBUILT; e <= CCSHIM_ENTRY_CLOSURE; e++) {
    ccshim_wrap_options o = CCSHIM_WRAP_OPTIONS_INIT;
    o.entry = (ccshim_entry_kind)e;
    ccshim_adapter* a;
    CHECK_OK(ccshim_wrap((ccshim_legacy_fn)axpb_v3, 3, CCSHIM_PLATFORM_HOST,
                         "(s64[], s64[]) -> s64[]", &o, &a));
    pthread_t threads[THREADS];
    worker workers[THREADS];
    for (int t = 0; t < THREADS; t++) {
      workers[t] = (worker){a, t, 0, 0};
      CHECK_EQ(pthread_create(&threads[t], NULL, work, &workers[t]), 0);
    }
    long failed = 0;
    for (int t = 0; t < THREADS; t++) {
      pthread_join(threads[t], NULL);
      CHECK_EQ(workers[t].wrong, 0);
      failed += workers[t].failed;
    }
    CHECK_EQ(failed, THREADS * (CALLS / 1000));
    CHECK_OK(ccshim_adapter_free(a));
    printf(
        "adapter threads (%s): %d threads x %d calls, every result right, "
        "%ld expected failures\n",
        e == CCSHIM_ENTRY_PREBUILT ? "prebuilt entry" : "libffi closure", THREADS, CALLS, failed);
  }
  return 0;
}
