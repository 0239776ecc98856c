/* Legacy C code registering targets with the macros, through the pre-2023
 * include paths. */
#include <stddef.h>

#include "tensorflow/compiler/xla/service/custom_call_status.h"
#include "tensorflow/compiler/xla/service/custom_call_target_registry.h"

void reg_c_host(void* out, const void** in) { *(int*)out = *(const int*)in[0] * 2; }
XLA_CPU_REGISTER_CUSTOM_CALL_TARGET(reg_c_host);
XLA_CPU_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM("reg_c_alias", reg_c_host);

void reg_c_gpu(void* stream, void** buffers, const char* opaque, size_t len) {
  (void)stream;
  (void)buffers;
  (void)opaque;
  (void)len;
}
XLA_REGISTER_CUSTOM_CALL_TARGET(reg_c_gpu, "CUDA");
XLA_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM("reg_c_gpu", reg_c_gpu, "ROCM");

/* A second kernel under a taken name: XLA would end the process here;
 * ccshim keeps the first, reports the conflict and counts it. */
void reg_c_other(void* out, const void** in) {
  (void)out;
  (void)in;
}
XLA_CPU_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM("reg_c_host", reg_c_other);
/* The same kernel again is fine. */
XLA_CPU_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM("reg_c_alias", reg_c_host);
