/*
 * The demo of `make demo`: the legacy CPU examples (examples/legacy), which
 * registered themselves with XLA's registration macros when this program
 * loaded, each run two ways on the same inputs:
 *
 *   legacy   the legacy invoker, calling the kernel as XLA's legacy runtime did;
 *   typed    a ccshim adapter, registered in the embedded typed runtime and
 *            invoked by name through a typed-FFI call frame.
 *
 * One row per kernel: its form, its signature, whether the outputs are
 * byte-identical, and whether a failing call fails the same way on both sides.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccshim/ccshim.h"

typedef struct example {
  const char* name;
  int api_version;
  const char* signature;
  /* How the opaque travels: bytes for the good run and for the bad run. */
  const void* opaque;
  size_t opaque_len;
  const void* bad_opaque;
  size_t bad_opaque_len;
  int poison_c; /* the bad run puts a NaN into C (v1 kernels cannot fail) */
} example;

static const struct {
  float scale;
  int32_t count;
} descriptor = {1.5f, 2000};
static const char short_descriptor[3] = {1, 0, 2};

static const example examples[] = {
    {"add_v1", 1, "(f32[128], f32[2048]) -> f32[2048]", NULL, 0, NULL, 0, 0},
    {"add_v2", 2, "(f32[128], f32[2048]) -> f32[2048]", NULL, 0, NULL, 0, 1},
    {"add_v3", 3, "(f32[128], f32[2048]) -> f32[2048]", &descriptor, sizeof descriptor,
     short_descriptor, sizeof short_descriptor, 0},
    {"tuple_tmp_v2", 2, "(f32[128], f32[2048]) -> (f32[2048], f32[2048])", NULL, 0, NULL, 0, 0},
};

/* Runs one side: legacy (adapter == NULL) or typed.  Results land in rets;
 * a failure's (code, message) in *code and msg. */
static int run(const example* ex, const ccshim_signature* sig, ccshim_adapter* adapter,
               void* const* args, void* const* rets, const void* opaque, size_t opaque_len,
               int* code, char* msg, size_t cap) {
  *code = 0;
  msg[0] = '\0';
  if (adapter == NULL) {
    ccshim_legacy_call call;
    memset(&call, 0, sizeof call);
    call.fn = ccshim_legacy_lookup(ex->name, "Host");
    call.api_version = ex->api_version;
    call.platform = CCSHIM_PLATFORM_HOST;
    call.signature = sig;
    call.args = args;
    call.num_args = sig->num_arg_leaves;
    call.rets = rets;
    call.num_rets = sig->num_ret_leaves;
    call.opaque = opaque;
    call.opaque_len = opaque_len;
    ccshim_legacy_outcome out;
    if (ccshim_legacy_invoke(&call, &out) != CCSHIM_OK) return -1;
    if (out.failed) {
      *code = out.code;
      snprintf(msg, cap, "%s", out.message);
    }
    ccshim_legacy_outcome_reset(&out);
    return 0;
  }
  ccshim_context* ctx;
  ccshim_frame_builder* fb;
  if (ccshim_context_new(NULL, &ctx) || ccshim_frame_builder_new(&fb)) return -1;
  for (size_t i = 0; i < sig->num_arg_leaves; i++) {
    const ccshim_shape* s = sig->arg_leaves[i];
    ccshim_frame_builder_add_arg(fb, (XLA_FFI_DataType)s->dtype, args[i], s->rank, s->dims);
  }
  for (size_t i = 0; i < sig->num_ret_leaves; i++) {
    const ccshim_shape* s = sig->ret_leaves[i];
    ccshim_frame_builder_add_ret(fb, (XLA_FFI_DataType)s->dtype, rets[i], s->rank, s->dims);
  }
  /* The opaque bytes travel as a u8 array attribute, so binary survives. */
  if (opaque_len)
    ccshim_frame_builder_add_array(fb, "opaque", XLA_FFI_DataType_U8, opaque, opaque_len);
  XLA_FFI_Error* err = NULL;
  ccshim_status st = ccshim_invoke(ex->name, "cpu", ctx, XLA_FFI_ExecutionStage_EXECUTE, fb, &err);
  if (st == CCSHIM_EHANDLER) {
    *code = (int)ccshim_error_code(err);
    snprintf(msg, cap, "%s", ccshim_error_message(err));
    ccshim_error_free(err);
    st = CCSHIM_OK;
  }
  ccshim_frame_builder_free(fb);
  ccshim_context_free(ctx);
  return st == CCSHIM_OK ? 0 : -1;
}

int main(void) {
  printf(
      "ccshim %s: legacy XLA custom calls run as typed-FFI handlers in the "
      "embedded runtime\n\n",
      ccshim_version());
  printf("%-13s %-7s %-50s %-8s %s\n", "kernel", "form", "signature", "outputs", "a failing call");
  int all_ok = 1;
  for (size_t k = 0; k < sizeof examples / sizeof examples[0]; k++) {
    const example* ex = &examples[k];
    ccshim_signature* sig;
    ccshim_adapter* adapter;
    if (ccshim_signature_parse(ex->signature, &sig) ||
        ccshim_wrap_registered(ex->name, "Host", ex->api_version, ex->signature, NULL, &adapter) ||
        ccshim_register_handler(ex->name, "cpu", ccshim_adapter_handler(adapter), 0)) {
      fprintf(stderr, "%s: %s\n", ex->name, ccshim_last_error());
      return 1;
    }
    /* Deterministic inputs; two result sets, filled with different bytes so
     * that an unwritten output cannot look equal. */
    float b[128], c[2048];
    float out_legacy[2][2048], out_typed[2][2048];
    for (int i = 0; i < 128; i++) b[i] = (float)(i % 7) - 3.0f;
    for (int i = 0; i < 2048; i++) c[i] = sinf(0.1f * (float)i);
    memset(out_legacy, 0xaa, sizeof out_legacy);
    memset(out_typed, 0x55, sizeof out_typed);
    void* args[2] = {b, c};
    void* rets_legacy[2] = {out_legacy[0], out_legacy[1]};
    void* rets_typed[2] = {out_typed[0], out_typed[1]};
    int code_l, code_t;
    char msg_l[256], msg_t[256];
    if (run(ex, sig, NULL, args, rets_legacy, ex->opaque, ex->opaque_len, &code_l, msg_l,
            sizeof msg_l) ||
        run(ex, sig, adapter, args, rets_typed, ex->opaque, ex->opaque_len, &code_t, msg_t,
            sizeof msg_t)) {
      fprintf(stderr, "%s: %s\n", ex->name, ccshim_last_error());
      return 1;
    }
    size_t bytes = sig->num_ret_leaves * sizeof out_legacy[0];
    int equal = code_l == 0 && code_t == 0 && memcmp(out_legacy, out_typed, bytes) == 0;

    /* A failing call: the same bad input to both sides. */
    char parity[600] = "n/a (no failing input)";
    if (ex->poison_c || ex->bad_opaque_len) {
      if (ex->poison_c) c[17] = NAN;
      run(ex, sig, NULL, args, rets_legacy, ex->bad_opaque, ex->bad_opaque_len, &code_l, msg_l,
          sizeof msg_l);
      run(ex, sig, adapter, args, rets_typed, ex->bad_opaque, ex->bad_opaque_len, &code_t, msg_t,
          sizeof msg_t);
      int same = code_l != 0 && code_l == code_t && strcmp(msg_l, msg_t) == 0;
      snprintf(parity, sizeof parity, "%s: %s: %s", same ? "same" : "DIFFERENT",
               ccshim_error_code_name((XLA_FFI_Error_Code)code_t), msg_t);
      all_ok &= same;
    }
    char form[8];
    snprintf(form, sizeof form, "CPU v%d", ex->api_version);
    printf("%-13s %-7s %-50s %-8s %s\n", ex->name, form, ex->signature, equal ? "equal" : "DIFFER",
           parity);
    all_ok &= equal;
    ccshim_signature_free(sig);
  }
  printf("\n%s\n", all_ok ? "every kernel: byte-identical outputs, identical failures"
                          : "MISMATCH: see the rows above");
  return all_ok ? 0 : 1;
}
