/*
 * A legacy kernel library built without any ccshim header and not linked
 * against libccshim (tests/foreign) is loaded with dlopen: its undefined
 * XlaCustomCallStatus* symbols resolve to libccshim's, and it runs through
 * an adapter, failures included.
 */
#include <dlfcn.h>

#include "adapter_util.h"

int main(void) {
  void* lib = dlopen(FOREIGN_KERNELS_PATH, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) CHECK_FAIL_("dlopen: %s", dlerror());
  void* sym = dlsym(lib, "foreign_sum_v3");
  CHECK(sym != NULL);
  ccshim_legacy_fn fn;
  memcpy(&fn, &sym, sizeof fn);
  /* Its status symbols were bound to libccshim's. */
  Dl_info info;
  void* setter = dlsym(RTLD_DEFAULT, "XlaCustomCallStatusSetFailure");
  CHECK(setter != NULL && dladdr(setter, &info) != 0);
  CHECK_CONTAINS(info.dli_fname, "libccshim");

  ccshim_adapter* a;
  CHECK_OK(ccshim_wrap(fn, 3, CCSHIM_PLATFORM_HOST, "(f64[4]) -> f64[]", NULL, &a));
  ccshim_context* ctx;
  CHECK_OK(ccshim_context_new(NULL, &ctx));
  double x[4] = {1.5, 2.5, 3, 4}, y = 0;
  int64_t n = 4;
  ccshim_frame_builder* fb;
  CHECK_OK(ccshim_frame_builder_new(&fb));
  CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_F64, x, 1, &n));
  CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_F64, &y, 0, NULL));
  CHECK_OK(ccshim_frame_builder_add_string(fb, "opaque", "4", 1));
  CHECK(call_adapter(a, fb, ctx) == NULL);
  CHECK(y == 11.0);
  x[2] = -1;
  expect_ffi_error(call_adapter(a, fb, ctx), XLA_FFI_Error_Code_INTERNAL,
                   "foreign_sum_v3: negative input");
  ccshim_frame_builder_free(fb);
  ccshim_context_free(ctx);
  CHECK_OK(ccshim_adapter_free(a));
  dlclose(lib);
  printf(
      "foreign kernel library (no ccshim header, not linked to it): ran, "
      "failure reported\n");
  return 0;
}
