/*
 * The vocabulary of legacy custom calls: platform names and legacy form
 * names, shared by the library, the ccshim command and the Python package
 * (which calls these through ctypes rather than keeping a list of its own).
 */
#include <ctype.h>
#include <string.h>

#include "base_internal.h"

const char* ccshim_platform_name(ccshim_platform platform) {
  switch (platform) {
    case CCSHIM_PLATFORM_HOST: return "host";
    case CCSHIM_PLATFORM_CUDA: return "cuda";
    case CCSHIM_PLATFORM_ROCM: return "rocm";
  }
  return "unknown";
}

ccshim_status ccshim_platform_parse(const char* name, ccshim_platform* out) {
  char low[16];
  size_t n = 0;
  for (; name && name[n] && n + 1 < sizeof low; n++) low[n] = (char)tolower((unsigned char)name[n]);
  low[n] = '\0';
  if (name && name[n] == '\0') {
    if (!strcmp(low, "host") || !strcmp(low, "cpu")) {
      *out = CCSHIM_PLATFORM_HOST;
      return CCSHIM_OK;
    }
    if (!strcmp(low, "cuda") || !strcmp(low, "gpu")) {
      *out = CCSHIM_PLATFORM_CUDA;
      return CCSHIM_OK;
    }
    if (!strcmp(low, "rocm")) {
      *out = CCSHIM_PLATFORM_ROCM;
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
