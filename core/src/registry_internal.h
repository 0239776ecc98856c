/*
 * The registry's entry point for XLA_FFI_Handler_Register.
 */
#ifndef CCSHIM_REGISTRY_INTERNAL_H
#define CCSHIM_REGISTRY_INTERNAL_H

#include "core_internal.h"

/* Registers as ccshim_register does.  When the handler's metadata query
 * itself failed, *handler_error receives that error (owned by the caller). */
ccshim_status ccshim__register(const char* name, const char* platform,
                               const XLA_FFI_Handler_Bundle* bundle, XLA_FFI_Handler_Traits traits,
                               XLA_FFI_Error** handler_error);

#endif /* CCSHIM_REGISTRY_INTERNAL_H */
