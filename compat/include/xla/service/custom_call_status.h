/*
 * Drop-in for XLA's xla/service/custom_call_status.h, provided by ccshim so
 * that legacy custom-call kernels compile unchanged.  Same C linkage and
 * prototypes as XLA's; libccshim exports the two functions, so kernels built
 * against XLA's header link against ccshim as well.
 */
#ifndef XLA_SERVICE_CUSTOM_CALL_STATUS_H_
#define XLA_SERVICE_CUSTOM_CALL_STATUS_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque to kernels.  Success is the default state. */
typedef struct XlaCustomCallStatus_ XlaCustomCallStatus;

/* Marks the call as successful, forgetting any earlier failure. */
void XlaCustomCallStatusSetSuccess(XlaCustomCallStatus* status);

/* Marks the call as failed with the first message_len bytes of message, or
 * fewer if a NUL comes first.  The runtime reports it as INTERNAL. */
void XlaCustomCallStatusSetFailure(XlaCustomCallStatus* status, const char* message,
                                   size_t message_len);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* XLA_SERVICE_CUSTOM_CALL_STATUS_H_ */
