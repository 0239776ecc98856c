/* The pre-2023 include path of xla/service/custom_call_target_registry.h, for legacy sources that
 * still spell it this way. */
#ifndef TENSORFLOW_COMPILER_XLA_SERVICE_CUSTOM_CALL_TARGET_REGISTRY_H_
#define TENSORFLOW_COMPILER_XLA_SERVICE_CUSTOM_CALL_TARGET_REGISTRY_H_
#include "xla/service/custom_call_target_registry.h"
#endif
