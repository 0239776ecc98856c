/*
 * The legacy invoker: calls a kernel as XLA's legacy runtime does
 * (xla/backends/cpu/runtime/custom_call_thunk.cc, CallUntypedAPI, and
 * xla/backends/gpu/runtime/legacy_custom_call_thunk.cc).  It is the
 * reference side of conformance checks, so it favours plainness over speed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base_internal.h"
#include "ccshim/legacy.h"
#include "layout.h"
#include "status_impl.h"

void ccshim_legacy_outcome_reset(ccshim_legacy_outcome* o) {
  if (o == NULL) return;
  free(o->message);
  memset(o, 0, sizeof *o);
}

static ccshim_status check_call(const ccshim_legacy_call* c) {
  if (c->fn == NULL) return ccshim__fail(CCSHIM_EINVAL, "legacy invoke: kernel is NULL");
  if (c->api_version < 1 || c->api_version > 3)
    return ccshim__fail(CCSHIM_EINVAL,
                        "legacy invoke: API version %d; expected 1 (original), "
                        "2 (status returning) or 3 (unified)",
                        c->api_version);
  if ((int)c->platform < CCSHIM_PLATFORM_HOST || (int)c->platform > CCSHIM_PLATFORM_ROCM)
    return ccshim__fail(CCSHIM_EINVAL, "legacy invoke: unknown platform %d", (int)c->platform);
  if ((c->args == NULL && c->num_args > 0) || (c->rets == NULL && c->num_rets > 0))
    return ccshim__fail(CCSHIM_EINVAL,
                        "legacy invoke: %s is NULL with %zu "
                        "entries",
                        c->args == NULL && c->num_args ? "args" : "rets",
                        c->args == NULL && c->num_args ? c->num_args : c->num_rets);
  if (c->opaque == NULL && c->opaque_len > 0)
    return ccshim__fail(CCSHIM_EINVAL,
                        "legacy invoke: opaque is NULL with "
                        "length %zu",
                        c->opaque_len);
  const ccshim_signature* sig = c->signature;
  if (sig != NULL && (sig->num_arg_leaves != c->num_args || sig->num_ret_leaves != c->num_rets))
    return ccshim__fail(CCSHIM_EINVAL,
                        "legacy invoke: the signature has %zu operand and %zu "
                        "result buffers, the call %zu and %zu",
                        sig->num_arg_leaves, sig->num_ret_leaves, c->num_args, c->num_rets);
  if (c->platform == CCSHIM_PLATFORM_HOST && c->tuple_operands == CCSHIM_TUPLES_NESTED &&
      sig == NULL)
    return ccshim__fail(CCSHIM_EINVAL,
                        "legacy invoke: the nested tuple layout "
                        "needs a signature to know the tuples");
  int tuple_result = sig ? sig->result->is_tuple : c->num_rets != 1;
  if (c->platform == CCSHIM_PLATFORM_HOST && !tuple_result && c->num_rets != 1)
    return ccshim__fail(CCSHIM_EINVAL,
                        "legacy invoke: a non-tuple result "
                        "needs exactly one result buffer");
  return CCSHIM_OK;
}

/* Runs a CPU kernel; in[] and out built as the thunk runtime builds them. */
static ccshim_status run_cpu(const ccshim_legacy_call* c, const char* opaque,
                             XlaCustomCallStatus* status) {
  void** in = NULL;
  int32_t* plan = NULL;
  size_t n = 0;
  ccshim_status st = CCSHIM_OK;
  if (c->tuple_operands == CCSHIM_TUPLES_NESTED) {
    st = ccshim__nested_plan(c->signature, &plan, &n);
    if (st != CCSHIM_OK) return st;
  } else {
    n = c->num_args;
  }
  in = malloc((n ? n : 1) * sizeof *in);
  void** out_table = malloc((c->num_rets ? c->num_rets : 1) * sizeof *out_table);
  if (in == NULL || out_table == NULL) {
    st = ccshim__fail(CCSHIM_ENOMEM, "out of memory");
    goto done;
  }
  if (plan)
    ccshim__nested_fill(plan, n, c->args, in);
  else if (n)
    memcpy(in, c->args, n * sizeof *in);
  if (c->num_rets) memcpy(out_table, c->rets, c->num_rets * sizeof *out_table);
  int tuple_result = c->signature ? c->signature->result->is_tuple : c->num_rets != 1;
  void* out = tuple_result ? (void*)out_table : c->rets[0];

  switch (c->api_version) {
    case 1: ((ccshim_cpu_v1_fn)c->fn)(out, (const void**)in); break;
    case 2: ((ccshim_cpu_v2_fn)c->fn)(out, (const void**)in, status); break;
    default: ((ccshim_cpu_v3_fn)c->fn)(out, (const void**)in, opaque, c->opaque_len, status); break;
  }
done:
  free(in);
  free(out_table);
  free(plan);
  return st;
}

static ccshim_status run_gpu(const ccshim_legacy_call* c, const char* opaque,
                             XlaCustomCallStatus* status) {
  size_t n = c->num_args + c->num_rets;
  void** buffers = malloc((n ? n : 1) * sizeof *buffers);
  if (buffers == NULL) return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
  if (c->num_args) memcpy(buffers, c->args, c->num_args * sizeof *buffers);
  if (c->num_rets) memcpy(buffers + c->num_args, c->rets, c->num_rets * sizeof *buffers);
  if (c->api_version == 1)
    ((ccshim_gpu_v1_fn)c->fn)(c->stream, buffers, opaque, c->opaque_len);
  else /* 2 and 3 share one signature on GPU */
    ((ccshim_gpu_v2_fn)c->fn)(c->stream, buffers, opaque, c->opaque_len, status);
  free(buffers);
  return CCSHIM_OK;
}

ccshim_status ccshim_legacy_invoke(const ccshim_legacy_call* c, ccshim_legacy_outcome* outcome) {
  if (c == NULL || outcome == NULL)
    return ccshim__fail(CCSHIM_EINVAL, "legacy invoke: %s is NULL", c == NULL ? "call" : "outcome");
  memset(outcome, 0, sizeof *outcome);
  ccshim_status st = check_call(c);
  if (st != CCSHIM_OK) return st;

  /* XLA hands kernels the c_str() of a std::string: NUL-terminated, with
   * the true length alongside, embedded NULs intact. */
  char* opaque = ccshim__strndup(c->opaque ? c->opaque : "", c->opaque_len);
  if (opaque == NULL) return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
  struct XlaCustomCallStatus_ status;
  ccshim__status_init(&status);

  st = c->platform == CCSHIM_PLATFORM_HOST ? run_cpu(c, opaque, &status)
                                           : run_gpu(c, opaque, &status);
  free(opaque);
  if (st == CCSHIM_OK && status.engaged) {
    const char* prefix = c->platform == CCSHIM_PLATFORM_HOST ? "" : "CustomCall failed: ";
    size_t plen = strlen(prefix);
    outcome->message = malloc(plen + status.length + 1);
    if (outcome->message == NULL) {
      st = ccshim__fail(CCSHIM_ENOMEM, "out of memory");
    } else {
      memcpy(outcome->message, prefix, plen);
      memcpy(outcome->message + plen, status.data, status.length);
      outcome->message[plen + status.length] = '\0';
      outcome->message_len = plen + status.length;
      outcome->failed = 1;
      outcome->code = 13; /* INTERNAL */
    }
  }
  ccshim__status_release(&status);
  return st;
}
