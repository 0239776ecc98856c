/*
 * ccshim_probe_typed_handler: telling a typed-FFI handler from a legacy
 * kernel when nothing but the function pointer is known, in a child that
 * cannot change this process.  Typed: ccshim's own adapters (they answer
 * the metadata query) and a plain C handler that only reports errors
 * through the API table.  Not typed: legacy kernels of each form, and one
 * that never returns (killed after 2 s).
 */
#include <time.h>
#include <unistd.h>

#include "adapter_util.h"

static int touched;

static void legacy_v1(void* out, const void** in) { *(float*)out = *(const float*)in[0]; }
static void legacy_v3(void* out, const void** in, const char* opaque, size_t len,
                      XlaCustomCallStatus* status) {
  (void)in, (void)status;
  memcpy(out, opaque, len);
}
static void legacy_gpu(void* stream, void** buffers, const char* opaque, size_t len) {
  (void)stream, (void)opaque, (void)len;
  buffers[0] = buffers[1];
}
/* A kernel that ignores its arguments and returns: nothing to tell it by. */
static void legacy_quiet(void* out, const void** in) {
  (void)out, (void)in;
  touched = 1; /* in the child only */
}
static void legacy_hangs(void* out, const void** in) {
  (void)out, (void)in;
  for (;;) pause();
}

/* A typed handler that knows nothing of the metadata query: an empty frame
 * is the wrong number of arguments, reported through the API table. */
static XLA_FFI_Error* plain_typed(XLA_FFI_CallFrame* frame) {
  if (frame->args.size != 1) {
    XLA_FFI_Error_Create_Args args;
    memset(&args, 0, sizeof args);
    args.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
    args.message = "expected 1 argument";
    args.errc = XLA_FFI_Error_Code_INVALID_ARGUMENT;
    return frame->api->XLA_FFI_Error_Create(&args);
  }
  return NULL;
}

static int probe(XLA_FFI_Handler* fn) {
  int typed = -1;
  CHECK_OK(ccshim_probe_typed_handler(fn, &typed));
  CHECK(typed == 0 || typed == 1);
  return typed;
}

#define AS_HANDLER(f) ((XLA_FFI_Handler*)(void (*)(void))(f))

int main(void) {
  ccshim_adapter* a;
  CHECK_OK(ccshim_wrap((ccshim_legacy_fn)legacy_v1, 1, CCSHIM_PLATFORM_HOST, NULL, NULL, &a));
  CHECK_EQ(probe(ccshim_adapter_handler(a)), 1);
  CHECK_EQ(probe(plain_typed), 1);

  CHECK_EQ(probe(AS_HANDLER(legacy_v1)), 0);
  CHECK_EQ(probe(AS_HANDLER(legacy_v3)), 0);
  CHECK_EQ(probe(AS_HANDLER(legacy_gpu)), 0);
  CHECK_EQ(probe(AS_HANDLER(legacy_quiet)), 0);
  CHECK_EQ(touched, 0); /* the child's write stayed in the child */
  time_t start = time(NULL);
  CHECK_EQ(probe(AS_HANDLER(legacy_hangs)), 0);
  CHECK_LE(time(NULL) - start, 10);

  /* Probing left nothing behind: the adapter was never asked here. */
  CHECK_OK(ccshim_adapter_free(a));
  CHECK_STATUS(ccshim_probe_typed_handler(NULL, &touched), CCSHIM_EINVAL);
  printf("probe: 2 typed handlers told, 5 legacy kernels not taken for one\n");
  return 0;
}
