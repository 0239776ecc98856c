/* XLA's legacy custom-call status (XlaCustomCallStatus and its two setters),
 * for kernels that now run under typed XLA FFI handlers: the handler gives
 * each call a status and turns a failure into an FFI error carrying the
 * message.  Added by `ccshim port` at the path the kernels include; plain C
 * and C++, it needs nothing of XLA. */
#ifndef XLA_LEGACY_CUSTOM_CALL_STATUS_H_
#define XLA_LEGACY_CUSTOM_CALL_STATUS_H_

#include <stddef.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A message longer than this is cut to it. */
#define XLA_LEGACY_STATUS_MESSAGE_MAX 4096

typedef struct XlaCustomCallStatus_ {
  int failed;
  size_t length;
  char message[XLA_LEGACY_STATUS_MESSAGE_MAX];
} XlaCustomCallStatus;

static inline void XlaCustomCallStatusSetSuccess(XlaCustomCallStatus* status) {
  status->failed = 0;
  status->length = 0;
}

/* As XLA's: message is message_len bytes, or up to its NUL if that comes first. */
static inline void XlaCustomCallStatusSetFailure(XlaCustomCallStatus* status, const char* message,
                                                 size_t message_len) {
  size_t n = 0;
  while (n < message_len && n < XLA_LEGACY_STATUS_MESSAGE_MAX && message[n] != '\0') n++;
  memcpy(status->message, message, n);
  status->length = n;
  status->failed = 1;
}

#ifdef __cplusplus
}
#endif

#endif /* XLA_LEGACY_CUSTOM_CALL_STATUS_H_ */
