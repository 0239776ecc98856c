// Legacy C++ code: the macros, and XLA's registry class used directly.
#include "xla/service/custom_call_status.h"
#include "xla/service/custom_call_target_registry.h"

extern "C" void reg_cc_kernel(void* out, const void** in, XlaCustomCallStatus* status) {
  *static_cast<int*>(out) = *static_cast<const int*>(in[0]) + 100;
  XlaCustomCallStatusSetSuccess(status);
}
XLA_CPU_REGISTER_CUSTOM_CALL_TARGET(reg_cc_kernel);

namespace {
struct RegisterByClass {
  RegisterByClass() {
    xla::CustomCallTargetRegistry::Global()->Register(
        "reg_cc_by_class", reinterpret_cast<void*>(&reg_cc_kernel), "Host");
  }
} register_by_class;
}  // namespace

extern "C" int reg_cc_lookup_matches(void) {
  void* found = xla::CustomCallTargetRegistry::Global()->Lookup("reg_cc_by_class", "Host");
  return found == reinterpret_cast<void*>(&reg_cc_kernel) &&
         xla::CustomCallTargetRegistry::Global()->Lookup("nothing", "Host") == nullptr;
}
