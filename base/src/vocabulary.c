/*
 * The vocabulary of legacy custom calls: platform names and legacy form
 * names, shared by the library, the ccshim command and the Python package
 * (which calls these through ctypes rather than keeping a list of its own).
 */
#include <ctype.h>
#include <string.h>

#include "base_internal.h"

/* Each platform's three spellings (ccshim/base.h says which reader each
 * is for), one row a platform in ccshim_platform order. */
static const char* const spellings[][3] = {
    {"host", "Host", "cpu"},
    {"cuda", "CUDA", "cuda"},
    {"rocm", "ROCM", "rocm"},
};

static const char* spelling(ccshim_platform platform, int which) {
  if ((int)platform < CCSHIM_PLATFORM_HOST || (int)platform > CCSHIM_PLATFORM_ROCM)
    return "unknown";
  return spellings[platform][which];
}

const char* ccshim_platform_name(ccshim_platform platform) { return spelling(platform, 0); }
const char* ccshim_platform_xla_name(ccshim_platform platform) { return spelling(platform, 1); }
const char* ccshim_platform_export_name(ccshim_platform platform) { return spelling(platform, 2); }

void ccshim_canonical_platform(const char* platform, char* buf, size_t cap) {
  if (cap == 0) return;
  size_t n = 0;
  for (; platform && platform[n] && n + 1 < cap; n++)
    buf[n] = (char)tolower((unsigned char)platform[n]);
  buf[n] = '\0';
  if (strcmp(buf, "cpu") == 0)
    ccshim__format(buf, cap, "host");
  else if (strcmp(buf, "gpu") == 0)
    ccshim__format(buf, cap, "cuda");
  else if (strcmp(buf, "oneapi") == 0)
    ccshim__format(buf, cap, "sycl");
}

ccshim_status ccshim_platform_parse(const char* name, ccshim_platform* out) {
  char canonical[16];
  if (name != NULL && strlen(name) < sizeof canonical) {
    ccshim_canonical_platform(name, canonical, sizeof canonical);
    for (ccshim_platform p = CCSHIM_PLATFORM_HOST; p <= CCSHIM_PLATFORM_ROCM; p++)
      if (!strcmp(canonical, ccshim_platform_name(p))) {
        *out = p;
        return CCSHIM_OK;
      }
  }
  return ccshim__fail(CCSHIM_EINVAL,
                      "unknown platform '%s'; expected cpu (or host), cuda "
                      "(or gpu) or rocm",
                      name ? name : "(null)");
}

const char* ccshim_legacy_form_name(int api_version, ccshim_platform platform) {
  static const char* const cpu[] = {"CPU v1", "CPU v2", "CPU v3"};
  static const char* const gpu[] = {"GPU v1", "GPU v2", "GPU v3"};
  if (api_version < 1 || api_version > 3) return NULL;
  switch (platform) {
    case CCSHIM_PLATFORM_HOST: return cpu[api_version - 1];
    case CCSHIM_PLATFORM_CUDA:
    case CCSHIM_PLATFORM_ROCM: return gpu[api_version - 1];
  }
  return NULL;
}

ccshim_legacy_form ccshim_legacy_form_of(int api_version, ccshim_platform platform) {
  if (api_version < 1 || api_version > 3) return CCSHIM_FORM_NONE;
  switch (platform) {
    case CCSHIM_PLATFORM_HOST: return (ccshim_legacy_form)(CCSHIM_FORM_CPU_V1 + api_version - 1);
    case CCSHIM_PLATFORM_CUDA:
    case CCSHIM_PLATFORM_ROCM: return api_version == 1 ? CCSHIM_FORM_GPU_V1 : CCSHIM_FORM_GPU_V23;
  }
  return CCSHIM_FORM_NONE;
}

const char* ccshim_legacy_form_text(ccshim_legacy_form form) {
  static const char* const text[] = {"CPU v1", "CPU v2", "CPU v3", "GPU v1", "GPU v2/v3"};
  if ((int)form < CCSHIM_FORM_CPU_V1 || (int)form > CCSHIM_FORM_GPU_V23) return "";
  return text[form];
}
