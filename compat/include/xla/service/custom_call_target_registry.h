/*
 * Drop-in for XLA's xla/service/custom_call_target_registry.h, provided by
 * ccshim.  The registration macros fill ccshim's legacy registry when the
 * library that uses them is loaded; ccshim_wrap_registered() and the Python
 * package then turn each entry into a typed-FFI handler.  Usable from C and
 * C++.
 *
 * As in XLA, a target is keyed by (name, platform), compared exactly and
 * case-sensitively; CPU kernels use "Host", GPU kernels "CUDA" or "ROCM".
 * One difference: where XLA ends the process on a second registration of a
 * name with a different address, ccshim keeps the first, prints the
 * conflict to stderr and records it (ccshim_legacy_conflicts()).
 */
#ifndef XLA_SERVICE_CUSTOM_CALL_TARGET_REGISTRY_H_
#define XLA_SERVICE_CUSTOM_CALL_TARGET_REGISTRY_H_

#include "ccshim/legacy.h"

#define CCSHIM__CAT2(a, b) a##b
#define CCSHIM__CAT(a, b) CCSHIM__CAT2(a, b)

/* A load-time constructor, unique per use, that registers one target.  The
 * closing forward declaration takes the `;` that follows the macro in legacy
 * code, which ISO C would otherwise refuse as an empty declaration. */
#define CCSHIM__REGISTER_AT_LOAD(symbol, address, platform)                            \
  __attribute__((constructor)) static void CCSHIM__CAT(ccshim__register_target_,       \
                                                       __COUNTER__)(void) {            \
    ccshim_legacy_register_at_load((symbol), (ccshim_legacy_fn)(address), (platform)); \
  }                                                                                    \
  struct ccshim__registration

#define XLA_REGISTER_CUSTOM_CALL_TARGET(function, platform) \
  XLA_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM(#function, function, platform)

#define XLA_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM(symbol, address, platform) \
  CCSHIM__REGISTER_AT_LOAD(symbol, address, platform)

#define XLA_CPU_REGISTER_CUSTOM_CALL_TARGET(function) \
  XLA_CPU_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM(#function, function)

#define XLA_CPU_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM(symbol, address) \
  XLA_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM(symbol, address, "Host")

#ifdef __cplusplus
#include <cstring>
#include <string>

namespace xla {

/* The parts of XLA's C++ registry class that legacy code calls directly. */
class CustomCallTargetRegistry {
 public:
  static CustomCallTargetRegistry* Global() {
    static CustomCallTargetRegistry registry;
    return &registry;
  }
  void Register(const std::string& symbol, void* address, const std::string& platform) {
    ccshim_legacy_fn fn;
    std::memcpy(&fn, &address, sizeof fn);
    ccshim_legacy_register_at_load(symbol.c_str(), fn, platform.c_str());
  }
  void* Lookup(const std::string& symbol, const std::string& platform) const {
    ccshim_legacy_fn fn = ccshim_legacy_lookup(symbol.c_str(), platform.c_str());
    void* address;
    std::memcpy(&address, &fn, sizeof address);
    return address;
  }
};

}  // namespace xla
#endif /* __cplusplus */

#endif /* XLA_SERVICE_CUSTOM_CALL_TARGET_REGISTRY_H_ */
