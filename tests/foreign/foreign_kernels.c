/*
 * A legacy kernel library as someone else built it: no ccshim header, no
 * ccshim library on its link line.  It declares XLA's status functions
 * itself, as XLA's header would, and leaves them undefined; they resolve
 * when the library is loaded into a process that has libccshim.
 */
#include <stddef.h>
#include <string.h>

typedef struct XlaCustomCallStatus_ XlaCustomCallStatus;
void XlaCustomCallStatusSetSuccess(XlaCustomCallStatus* status);
void XlaCustomCallStatusSetFailure(XlaCustomCallStatus* status, const char* message,
                                   size_t message_len);

/* (f64[n]) -> f64[]: the sum, failing on a negative entry.  n comes from
 * the opaque, as text. */
void foreign_sum_v3(void* out, const void** in, const char* opaque, size_t len,
                    XlaCustomCallStatus* status) {
  const double* x = in[0];
  size_t n = 0;
  for (size_t i = 0; i < len; i++) n = n * 10 + (size_t)(opaque[i] - '0');
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    if (x[i] < 0) {
      static const char msg[] = "foreign_sum_v3: negative input";
      XlaCustomCallStatusSetFailure(status, msg, strlen(msg));
      return;
    }
    sum += x[i];
  }
  *(double*)out = sum;
  XlaCustomCallStatusSetSuccess(status);
}
