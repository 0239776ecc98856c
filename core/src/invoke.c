/*
 * Invoke: build a frame, call a handler, wait for its future, and hand back
 * what it returned.  This is xla/ffi/invoke.cc's job in XLA.
 */
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

void ccshim__future_wait(XLA_FFI_Future* f) {
  pthread_mutex_lock(&f->mu);
  while (f->state == CCSHIM__FUTURE_PENDING) pthread_cond_wait(&f->done, &f->mu);
  pthread_mutex_unlock(&f->mu);
}

void ccshim__future_free(XLA_FFI_Future* f) {
  pthread_mutex_destroy(&f->mu);
  pthread_cond_destroy(&f->done);
  free(f);
}

/* Turns what a handler returned into ccshim's status, consuming `err`. */
static ccshim_status take_result(XLA_FFI_Error* err, XLA_FFI_Error** out) {
  if (err != NULL && err->code == XLA_FFI_Error_Code_OK) {
    /* XLA reads an OK-coded error as success. */
    ccshim_error_free(err);
    err = NULL;
  }
  if (err == NULL) return CCSHIM_OK;
  ccshim__fail(CCSHIM_EHANDLER, "%s: %s", ccshim_error_code_name(err->code), err->message);
  if (out)
    *out = err;
  else
    ccshim_error_free(err);
  return CCSHIM_EHANDLER;
}

ccshim_status ccshim_call_frame(XLA_FFI_Handler* handler, XLA_FFI_CallFrame* frame,
                                XLA_FFI_Error** error) {
  if (error) *error = NULL;
  if (handler == NULL || frame == NULL)
    return ccshim__fail(CCSHIM_EINVAL, "call: %s is NULL", handler == NULL ? "handler" : "frame");
  frame->future = NULL;
  XLA_FFI_Error* err = handler(frame);
  XLA_FFI_Future* future = frame->future;
  if (future != NULL) {
    /* A handler must not both fail and promise a result; if it does, the
     * error wins, but the future is still awaited so that no task is left
     * writing into freed memory. */
    ccshim__future_wait(future);
    if (err == NULL && future->state == CCSHIM__FUTURE_ERROR) {
      err = future->error;
      future->error = NULL;
    }
    ccshim_error_free(future->error);
    ccshim__future_free(future);
    frame->future = NULL;
  }
  return take_result(err, error);
}

ccshim_status ccshim_invoke_handler(XLA_FFI_Handler* handler, ccshim_context* ctx,
                                    XLA_FFI_ExecutionStage stage, ccshim_frame_builder* fb,
                                    XLA_FFI_Error** error) {
  if (error) *error = NULL;
  if (handler == NULL) return ccshim__fail(CCSHIM_EINVAL, "invoke: handler is NULL");
  XLA_FFI_CallFrame frame;
  ccshim_status st;
  if (fb != NULL) {
    st = ccshim_frame_builder_build(fb, ccshim_ffi_api(), ctx, stage, &frame);
    if (st != CCSHIM_OK) return st;
  } else {
    ccshim_frame_builder* empty;
    if ((st = ccshim_frame_builder_new(&empty)) != CCSHIM_OK) return st;
    st = ccshim_frame_builder_build(empty, ccshim_ffi_api(), ctx, stage, &frame);
    if (st == CCSHIM_OK) st = ccshim_call_frame(handler, &frame, error);
    ccshim_frame_builder_free(empty);
    return st;
  }
  return ccshim_call_frame(handler, &frame, error);
}

static XLA_FFI_Handler* stage_handler(const XLA_FFI_Handler_Bundle* b,
                                      XLA_FFI_ExecutionStage stage) {
  switch (stage) {
    case XLA_FFI_ExecutionStage_INSTANTIATE: return b->instantiate;
    case XLA_FFI_ExecutionStage_PREPARE: return b->prepare;
    case XLA_FFI_ExecutionStage_INITIALIZE: return b->initialize;
    case XLA_FFI_ExecutionStage_EXECUTE: return b->execute;
    case XLA_FFI_ExecutionStage_RECORD: return b->record;
  }
  return NULL;
}

ccshim_status ccshim_invoke(const char* name, const char* platform, ccshim_context* ctx,
                            XLA_FFI_ExecutionStage stage, ccshim_frame_builder* fb,
                            XLA_FFI_Error** error) {
  if (error) *error = NULL;
  if (ctx == NULL) return ccshim__fail(CCSHIM_EINVAL, "invoke: ctx is NULL");
  if ((int)stage < XLA_FFI_ExecutionStage_INSTANTIATE || (int)stage > XLA_FFI_ExecutionStage_RECORD)
    return ccshim__fail(CCSHIM_EINVAL,
                        "invoke: stage %d is not one of "
                        "instantiate(0) .. record(4)",
                        (int)stage);
  ccshim_registration reg;
  ccshim_status st = ccshim_lookup(name, platform, &reg);
  if (st != CCSHIM_OK) return st;
  char canonical[64];
  ccshim_canonical_platform(platform, canonical, sizeof canonical);
  if (strcmp(canonical, ctx->platform) != 0)
    return ccshim__fail(CCSHIM_EINVAL,
                        "invoke %s: the handler is registered for %s but the "
                        "context is for %s",
                        name, canonical, ctx->platform);
  XLA_FFI_Handler* h = stage_handler(&reg.bundle, stage);
  if (h == NULL) return CCSHIM_OK; /* XLA invokes only the stages a bundle has */
  return ccshim_invoke_handler(h, ctx, stage, fb, error);
}
