/*
 * The one vocabulary of legacy custom calls (ccshim/base.h): platform
 * spellings and names, and legacy form names, as the library, the command
 * and the Python package all use them.
 */
#include "ccshim/ccshim.h"
#include "check.h"

int main(void) {
  static const struct {
    const char* spelling;
    ccshim_platform platform;
    const char* name;
  } spellings[] = {
      {"cpu", CCSHIM_PLATFORM_HOST, "host"},  {"Host", CCSHIM_PLATFORM_HOST, "host"},
      {"GPU", CCSHIM_PLATFORM_CUDA, "cuda"},  {"cuda", CCSHIM_PLATFORM_CUDA, "cuda"},
      {"ROCm", CCSHIM_PLATFORM_ROCM, "rocm"},
  };
  for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
    ccshim_platform p = (ccshim_platform)-1;
    CHECK_OK(ccshim_platform_parse(spellings[i].spelling, &p));
    CHECK_EQ(p, spellings[i].platform);
    CHECK_STR_EQ(ccshim_platform_name(p), spellings[i].name);
  }
  ccshim_platform p;
  CHECK_STATUS(ccshim_platform_parse("tpu", &p), CCSHIM_EINVAL);
  CHECK_CONTAINS(ccshim_last_error(), "unknown platform 'tpu'; expected cpu (or host)");
  CHECK_STATUS(ccshim_platform_parse("cudaaaaaaaaaaaaaaaaaaa", &p), CCSHIM_EINVAL);
  CHECK_STATUS(ccshim_platform_parse(NULL, &p), CCSHIM_EINVAL);
  CHECK_STR_EQ(ccshim_platform_name((ccshim_platform)7), "unknown");
  /* The three spellings of a platform, each for its reader. */
  CHECK_STR_EQ(ccshim_platform_xla_name(CCSHIM_PLATFORM_HOST), "Host");
  CHECK_STR_EQ(ccshim_platform_xla_name(CCSHIM_PLATFORM_CUDA), "CUDA");
  CHECK_STR_EQ(ccshim_platform_xla_name(CCSHIM_PLATFORM_ROCM), "ROCM");
  CHECK_STR_EQ(ccshim_platform_export_name(CCSHIM_PLATFORM_HOST), "cpu");
  CHECK_STR_EQ(ccshim_platform_export_name(CCSHIM_PLATFORM_ROCM), "rocm");
  CHECK_STR_EQ(ccshim_platform_xla_name((ccshim_platform)7), "unknown");
  /* XLA's canonical form of any registry key; parse goes through it. */
  char canon[32];
  ccshim_canonical_platform("oneAPI", canon, sizeof canon);
  CHECK_STR_EQ(canon, "sycl");
  ccshim_canonical_platform("CPU", canon, sizeof canon);
  CHECK_STR_EQ(canon, "host");
  CHECK_STATUS(ccshim_platform_parse("oneapi", &p), CCSHIM_EINVAL);

  CHECK_STR_EQ(ccshim_legacy_form_name(1, CCSHIM_PLATFORM_HOST), "CPU v1");
  CHECK_STR_EQ(ccshim_legacy_form_name(3, CCSHIM_PLATFORM_HOST), "CPU v3");
  CHECK_STR_EQ(ccshim_legacy_form_name(2, CCSHIM_PLATFORM_CUDA), "GPU v2");
  CHECK_STR_EQ(ccshim_legacy_form_name(1, CCSHIM_PLATFORM_ROCM), "GPU v1");
  CHECK(ccshim_legacy_form_name(0, CCSHIM_PLATFORM_HOST) == NULL);
  CHECK(ccshim_legacy_form_name(4, CCSHIM_PLATFORM_HOST) == NULL);
  CHECK(ccshim_legacy_form_name(2, (ccshim_platform)9) == NULL);
  /* The forms as the adapters and scan use them. */
  CHECK_EQ(ccshim_legacy_form_of(1, CCSHIM_PLATFORM_HOST), CCSHIM_FORM_CPU_V1);
  CHECK_EQ(ccshim_legacy_form_of(3, CCSHIM_PLATFORM_HOST), CCSHIM_FORM_CPU_V3);
  CHECK_EQ(ccshim_legacy_form_of(1, CCSHIM_PLATFORM_ROCM), CCSHIM_FORM_GPU_V1);
  CHECK_EQ(ccshim_legacy_form_of(2, CCSHIM_PLATFORM_CUDA), CCSHIM_FORM_GPU_V23);
  CHECK_EQ(ccshim_legacy_form_of(3, CCSHIM_PLATFORM_CUDA), CCSHIM_FORM_GPU_V23);
  CHECK_EQ(ccshim_legacy_form_of(4, CCSHIM_PLATFORM_HOST), CCSHIM_FORM_NONE);
  CHECK_STR_EQ(ccshim_legacy_form_text(CCSHIM_FORM_GPU_V23), "GPU v2/v3");
  CHECK_STR_EQ(ccshim_legacy_form_text(CCSHIM_FORM_NONE), "");
  printf("vocabulary: 5 spellings, 4 refusals, 3 names each, 7 form names\n");
  return 0;
}
