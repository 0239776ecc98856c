/*
 * Legacy kernels for the tests of `ccshim conform`: each shows one outcome
 * the command must report -- equal for every element type, different,
 * within a tolerance, failed alike, crashed, hung, exited, overran.  Built
 * as a shared library of legacy code, as a user's would be.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xla/service/custom_call_status.h"

#define EXPORT __attribute__((visibility("default")))

/* Copies in[0] to out; the opaque is the byte count in decimal, so one
 * kernel serves every element type and shape. */
EXPORT void copy_bytes_v3(void* out, const void** in, const char* opaque, size_t opaque_len,
                          XlaCustomCallStatus* status) {
  char digits[32];
  if (opaque_len == 0 || opaque_len >= sizeof digits) {
    static const char msg[] = "copy_bytes_v3: the opaque must be a byte count";
    XlaCustomCallStatusSetFailure(status, msg, sizeof msg - 1);
    return;
  }
  memcpy(digits, opaque, opaque_len);
  digits[opaque_len] = '\0';
  size_t n = (size_t)strtoull(digits, NULL, 10);
  if (n) memcpy(out, in[0], n);
}

/* A tuple result in the v1 form: out is a table of result buffers.
 *   (f64[16]) -> (f64[16], s32[16]): the values doubled, and their signs. */
EXPORT void split_v1(void* out, const void** in) {
  void** outs = (void**)out;
  const double* x = (const double*)in[0];
  double* twice = (double*)outs[0];
  int32_t* sign = (int32_t*)outs[1];
  for (int i = 0; i < 16; i++) {
    twice[i] = 2 * x[i];
    sign[i] = (x[i] > 0) - (x[i] < 0);
  }
}

/* Nondeterministic: the result depends on the process, as a kernel seeded
 * from the clock or the pid would.  (f32[64]) -> f32[64] */
EXPORT void noisy_v2(void* out, const void** in, XlaCustomCallStatus* status) {
  (void)status;
  const float* x = (const float*)in[0];
  float* y = (float*)out;
  for (int i = 0; i < 64; i++) y[i] = x[i] + (float)(getpid() % 97) * 0.5f;
}

/* Off in the last bits only: equal within --rtol 1e-9, not byte for byte.
 * Each process scales by its own factor, at most 1.009e-10 off 1; two
 * sides' factors coincide only when their pids agree modulo 1009 (with 7,
 * as it was, every run of a target did 1 time in 343 under a busy machine's
 * pids, and "differ" read "equal").  (f64[64]) -> f64[64] */
EXPORT void rounding_v1(void* out, const void** in) {
  const double* x = (const double*)in[0];
  double* y = (double*)out;
  for (int i = 0; i < 64; i++) y[i] = x[i] * (1.0 + (double)(getpid() % 1009 + 1) * 1e-13);
}

/* Fails alike on both sides. */
EXPORT void refuse_v2(void* out, const void** in, XlaCustomCallStatus* status) {
  (void)out;
  (void)in;
  static const char msg[] = "refuse_v2: this kernel always refuses";
  XlaCustomCallStatusSetFailure(status, msg, sizeof msg - 1);
}

/* Fails with a different message on each side. */
EXPORT void refuse_differently_v2(void* out, const void** in, XlaCustomCallStatus* status) {
  (void)out;
  (void)in;
  char msg[64];
  size_t n = 0;
  const char head[] = "refused in process ";
  memcpy(msg, head, sizeof head - 1);
  n = sizeof head - 1;
  for (long pid = getpid(); pid > 0 && n < sizeof msg - 1; pid /= 10)
    msg[n++] = (char)('0' + pid % 10);
  XlaCustomCallStatusSetFailure(status, msg, n);
}

/* Crashes: a write through NULL. */
EXPORT void crash_v1(void* out, const void** in) {
  (void)out;
  (void)in;
  volatile int* volatile nowhere = NULL;
  *nowhere = 1;
}

/* Never returns. */
EXPORT void spin_v1(void* out, const void** in) {
  (void)out;
  (void)in;
  for (;;) pause();
}

/* Exits the process from inside the kernel. */
EXPORT void exit_v2(void* out, const void** in, XlaCustomCallStatus* status) {
  (void)out;
  (void)in;
  (void)status;
  _exit(3);
}

/* Writes one element more than its result has: (f32[15]) -> f32[15]. */
EXPORT void overrun_v1(void* out, const void** in) {
  const float* x = (const float*)in[0];
  float* y = (float*)out;
  for (int i = 0; i < 16; i++) y[i] = i < 15 ? x[i] : 0.0f;
}

/* ((f32[4], f32[4]), f32[4]) -> f32[4] in XLA's classic nested convention:
 * in[0] is the tuple operand's table of its two buffers. */
EXPORT void nested_sum_v1(void* out, const void** in) {
  const float* const* pair = in[0];
  const float* c = in[1];
  for (int i = 0; i < 4; i++) ((float*)out)[i] = pair[0][i] + pair[1][i] + c[i];
}
