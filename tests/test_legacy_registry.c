/*
 * The legacy registry as the drop-in macros fill it, from C and C++, through
 * the current and the pre-2023 include paths, with XLA's exact, case-
 * sensitive keys; conflicts kept out and counted instead of ending the
 * process; and registered kernels wrapped by name.
 */
#include "adapter_util.h"

void reg_c_host(void* out, const void** in);
void reg_c_gpu(void* stream, void** buffers, const char* opaque, size_t len);
void reg_cc_kernel(void* out, const void** in, XlaCustomCallStatus* status);
int reg_cc_lookup_matches(void);

int main(void) {
  CHECK(ccshim_legacy_lookup("reg_c_host", "Host") == (ccshim_legacy_fn)reg_c_host);
  CHECK(ccshim_legacy_lookup("reg_c_alias", "Host") == (ccshim_legacy_fn)reg_c_host);
  CHECK(ccshim_legacy_lookup("reg_c_gpu", "CUDA") == (ccshim_legacy_fn)reg_c_gpu);
  CHECK(ccshim_legacy_lookup("reg_c_gpu", "ROCM") == (ccshim_legacy_fn)reg_c_gpu);
  CHECK(ccshim_legacy_lookup("reg_cc_kernel", "Host") == (ccshim_legacy_fn)reg_cc_kernel);
  CHECK(ccshim_legacy_lookup("reg_cc_by_class", "Host") == (ccshim_legacy_fn)reg_cc_kernel);
  CHECK(reg_cc_lookup_matches());
  /* Keys are exact, as in XLA's registry. */
  CHECK(ccshim_legacy_lookup("reg_c_host", "host") == NULL);
  CHECK(ccshim_legacy_lookup("reg_c_gpu", "Host") == NULL);
  /* The load-time conflict kept the first kernel and was counted. */
  CHECK_EQ(ccshim_legacy_conflicts(), 1);
  CHECK_STATUS(ccshim_legacy_register("reg_c_host", (ccshim_legacy_fn)reg_c_gpu, "Host"),
               CCSHIM_EEXIST);
  CHECK_CONTAINS(ccshim_last_error(), "already registered with a different address");
  CHECK_OK(ccshim_legacy_register("reg_c_host", (ccshim_legacy_fn)reg_c_host, "Host"));
  CHECK_STATUS(ccshim_legacy_register(NULL, (ccshim_legacy_fn)reg_c_host, "Host"), CCSHIM_EINVAL);

  /* Enumerating: every entry once. */
  size_t n = ccshim_legacy_count();
  CHECK_EQ(n, 6);
  int seen_class = 0;
  for (size_t i = 0; i < n; i++) {
    const char *name, *platform;
    ccshim_legacy_fn fn;
    CHECK_OK(ccshim_legacy_target(i, &name, &platform, &fn));
    seen_class += strcmp(name, "reg_cc_by_class") == 0 && strcmp(platform, "Host") == 0;
  }
  CHECK_EQ(seen_class, 1);
  CHECK_STATUS(ccshim_legacy_target(n, NULL, NULL, NULL), CCSHIM_ENOENT);

  /* Wrapped by name and run. */
  ccshim_context* ctx;
  CHECK_OK(ccshim_context_new(NULL, &ctx));
  const char* names[2] = {"reg_c_host", "reg_cc_by_class"};
  const int versions[2] = {1, 2};
  const int want[2] = {42, 121};
  for (int k = 0; k < 2; k++) {
    ccshim_adapter* a;
    CHECK_OK(ccshim_wrap_registered(names[k], "Host", versions[k], "(s32[]) -> s32[]", NULL, &a));
    int x = 21 * (k == 0) + 21 * (k == 1), y = 0;
    ccshim_frame_builder* fb;
    CHECK_OK(ccshim_frame_builder_new(&fb));
    CHECK_OK(ccshim_frame_builder_add_arg(fb, XLA_FFI_DataType_S32, &x, 0, NULL));
    CHECK_OK(ccshim_frame_builder_add_ret(fb, XLA_FFI_DataType_S32, &y, 0, NULL));
    CHECK(call_adapter(a, fb, ctx) == NULL);
    CHECK_EQ(y, want[k]);
    ccshim_frame_builder_free(fb);
    CHECK_OK(ccshim_adapter_free(a));
  }
  ccshim_context_free(ctx);
  printf(
      "legacy registry: %zu targets from C and C++ macros and XLA's class; "
      "1 conflict kept out\n",
      n);
  return 0;
}
