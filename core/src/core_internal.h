/*
 * The embedded runtime's private types: what XLA_FFI_Error, XLA_FFI_Future and
 * XLA_FFI_InvokeContext are inside ccshim.
 */
#ifndef CCSHIM_CORE_INTERNAL_H
#define CCSHIM_CORE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "base_internal.h"
#include "ccshim/runtime.h"

struct XLA_FFI_Error {
  XLA_FFI_Error_Code code;
  char message[]; /* NUL-terminated */
};

/* A future's states. */
typedef enum ccshim__future_state {
  CCSHIM__FUTURE_PENDING = 0,
  CCSHIM__FUTURE_AVAILABLE = 1,
  CCSHIM__FUTURE_ERROR = 2,
} ccshim__future_state;

struct XLA_FFI_Future {
  pthread_mutex_t mu;
  pthread_cond_t done;
  ccshim__future_state state;
  XLA_FFI_Error* error;
};

typedef struct ccshim__task {
  struct ccshim__task* next;
  XLA_FFI_Task* fn;
  void* data;
} ccshim__task;

typedef struct ccshim__pool {
  pthread_mutex_t mu;
  pthread_cond_t ready;
  ccshim__task* head;
  ccshim__task* tail;
  int stopping;
  int num_threads;
  pthread_t threads[];
} ccshim__pool;

/* State objects are kept per stage, as XLA keeps them per thunk. */
typedef struct ccshim__state {
  int64_t type_id; /* 0 when unset */
  void* object;
  void (*deleter)(void*);
} ccshim__state;

typedef struct ccshim__user_data {
  int64_t type_id;
  void* data;
} ccshim__user_data;

#define CCSHIM__CONTEXT_MAGIC 0x63637368696d6378ull /* "ccshimcx" */

struct XLA_FFI_InvokeContext {
  uint64_t magic; /* tells a ccshim context from a foreign pointer */
  char platform[16];
  int is_gpu;
  void* stream;
  char stream_token; /* its address is the stream value handed out */
  int32_t device_ordinal;
  int64_t run_id;
  pthread_mutex_t mu;      /* guards states and user_data */
  ccshim__state states[3]; /* INSTANTIATE, PREPARE, INITIALIZE */
  ccshim__user_data* user_data;
  size_t num_user_data;
  const XLA_FFI_Extension* extensions;
  ccshim__pool* pool;
  ccshim_alloc_fn alloc;
  ccshim_free_fn free;
  void* alloc_user;
};

/* api.c */
/* The process-lifetime error returned when there is no memory for one
 * (never NULL, which would read as success), and the one way to destroy an
 * error of this runtime (which leaves that one alone). */
XLA_FFI_Error* ccshim__oom_error(void);
void ccshim__error_destroy(XLA_FFI_Error* e);

XLA_FFI_Error* ccshim__error_new(XLA_FFI_Error_Code code, const char* fmt, ...)
    CCSHIM__PRINTF(2, 3);
ccshim_status ccshim__type_deleter(int64_t type_id, void (**deleter)(void*));

/* context.c */
int ccshim__pool_schedule(ccshim__pool* pool, XLA_FFI_Task* fn, void* data);

/* registry.c: the metadata query exactly as XLA sends it. */
/* The metadata query XLA sends a handler at registration: a call frame with
 * the metadata extension, everything else empty.  Self-contained: build it
 * in place with ccshim__metadata_frame. */
typedef struct ccshim__metadata_call {
  XLA_FFI_Metadata metadata;
  XLA_FFI_Metadata_Extension ext;
  XLA_FFI_CallFrame frame;
} ccshim__metadata_call;
void ccshim__metadata_frame(const XLA_FFI_Api* api, ccshim__metadata_call* call);

ccshim_status ccshim__metadata_query(const XLA_FFI_Api* api, XLA_FFI_Handler* handler,
                                     XLA_FFI_Metadata* out, XLA_FFI_Error** error);

/* invoke.c */
void ccshim__future_wait(XLA_FFI_Future* future);
void ccshim__future_free(XLA_FFI_Future* future);

#endif /* CCSHIM_CORE_INTERNAL_H */
