/*
 * Status names, the per-thread error message and small formatting helpers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base_internal.h"

/* One message per thread, like dlerror(): the failing call writes it, the
 * caller reads it before its next ccshim call. */
/* Messages longer than this end in "..." (they quote signatures, which
 * have no bound): shortened in plain sight, never silently. */
static _Thread_local char last_error[2048];

const char* ccshim_status_name(ccshim_status status) {
  switch (status) {
    case CCSHIM_OK: return "CCSHIM_OK";
    case CCSHIM_EINVAL: return "CCSHIM_EINVAL";
    case CCSHIM_ENOMEM: return "CCSHIM_ENOMEM";
    case CCSHIM_ENOENT: return "CCSHIM_ENOENT";
    case CCSHIM_EEXIST: return "CCSHIM_EEXIST";
    case CCSHIM_EBUSY: return "CCSHIM_EBUSY";
    case CCSHIM_EOVERFLOW: return "CCSHIM_EOVERFLOW";
    case CCSHIM_EVERSION: return "CCSHIM_EVERSION";
    case CCSHIM_ESIGNATURE: return "CCSHIM_ESIGNATURE";
    case CCSHIM_EUNSUPPORTED: return "CCSHIM_EUNSUPPORTED";
    case CCSHIM_EHANDLER: return "CCSHIM_EHANDLER";
  }
  return "CCSHIM_UNKNOWN_STATUS";
}

const char* ccshim_last_error(void) { return last_error; }

const char* ccshim_version(void) { return CCSHIM_VERSION_STRING; }

ccshim_status ccshim__vfail(ccshim_status status, const char* fmt, va_list ap) {
  int n = vsnprintf(last_error, sizeof last_error, fmt, ap);
  if (n >= (int)sizeof last_error) memcpy(last_error + sizeof last_error - 4, "...", 4);
  return status;
}

ccshim_status ccshim__fail(ccshim_status status, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ccshim__vfail(status, fmt, ap);
  va_end(ap);
  return status;
}

char* ccshim__strndup(const char* s, size_t len) {
  char* copy = malloc(len + 1);
  if (copy == NULL) return NULL;
  if (len > 0) memcpy(copy, s, len);
  copy[len] = '\0';
  return copy;
}

size_t ccshim__format(char* buf, size_t cap, const char* fmt, ...) {
  if (cap == 0) return 0;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, cap, fmt, ap);
  va_end(ap);
  if (n < 0) {
    buf[0] = '\0';
    return 0;
  }
  return (size_t)n < cap ? (size_t)n : cap - 1;
}

size_t ccshim__format_shape(char* buf, size_t cap, int dtype, int64_t rank, const int64_t* dims) {
  const char* name = ccshim_dtype_name(dtype);
  size_t n =
      name ? ccshim__format(buf, cap, "%s", name) : ccshim__format(buf, cap, "dtype(%d)", dtype);
  if (dtype == CCSHIM__DTYPE_TOKEN) return n + ccshim__format(buf + n, cap - n, "[]");
  n += ccshim__format(buf + n, cap - n, "[");
  for (int64_t i = 0; i < rank && dims != NULL && n + 1 < cap; i++)
    n += ccshim__format(buf + n, cap - n, i ? ",%lld" : "%lld", (long long)dims[i]);
  n += ccshim__format(buf + n, cap - n, "]");
  return n;
}
