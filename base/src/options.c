/*
 * Reading versioned option structs: the struct_size rules of base.h.
 */
#include <string.h>

#include "base_internal.h"

ccshim_status ccshim__read_options(void* dst, size_t known, const void* src, size_t min,
                                   const char* type, const char* init) {
  memset(dst, 0, known);
  if (src == NULL) {
    memcpy(dst, &known, sizeof known);
    return CCSHIM_OK;
  }
  size_t size;
  memcpy(&size, src, sizeof size);
  if (size == 0)
    return ccshim__fail(CCSHIM_EINVAL,
                        "%s.struct_size is 0: initialise the "
                        "struct with %s (it sets struct_size to the size your "
                        "code was compiled with)",
                        type, init);
  if (size < min || size > CCSHIM_STRUCT_SIZE_MAX)
    return ccshim__fail(CCSHIM_EINVAL,
                        "%s.struct_size is %zu; expected %zu to "
                        "%d: initialise the struct with %s",
                        type, size, min, CCSHIM_STRUCT_SIZE_MAX, init);
  const unsigned char* bytes = src;
  for (size_t i = known; i < size; i++) {
    if (bytes[i] != 0)
      return ccshim__fail(CCSHIM_EUNSUPPORTED,
                          "%s: byte %zu is set, past the "
                          "%zu bytes this libccshim %s knows; the caller was "
                          "built against a newer ccshim whose option this "
                          "library cannot honour",
                          type, i, known, ccshim_version());
  }
  memcpy(dst, src, size < known ? size : known);
  memcpy(dst, &known, sizeof known);
  return CCSHIM_OK;
}
