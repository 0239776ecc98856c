/*
 * The embedded runtime's XLA_FFI_Api table and the functions behind it.
 *
 * Each function behaves as XLA's (xla/ffi/ffi_api.cc) does: a struct_size
 * smaller than the caller's header version is INVALID_ARGUMENT "Unexpected
 * ... size", the 0.1-0.3 layouts XLA still reads are read the same way, and
 * the messages follow XLA's wording.  Where XLA would crash on a malformed
 * argument (a NULL args, ctx or out pointer) these return INVALID_ARGUMENT.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "registry_internal.h"

/* ---------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------ */

/* base/ names the element types it reads; they must be XLA's numbers. */
_Static_assert((int)CCSHIM__DTYPE_INVALID == (int)XLA_FFI_DataType_INVALID, "dtype INVALID");
_Static_assert((int)CCSHIM__DTYPE_S8 == (int)XLA_FFI_DataType_S8, "dtype S8");
_Static_assert((int)CCSHIM__DTYPE_S64 == (int)XLA_FFI_DataType_S64, "dtype S64");
_Static_assert((int)CCSHIM__DTYPE_U8 == (int)XLA_FFI_DataType_U8, "dtype U8");
_Static_assert((int)CCSHIM__DTYPE_U64 == (int)XLA_FFI_DataType_U64, "dtype U64");
_Static_assert((int)CCSHIM__DTYPE_TOKEN == (int)XLA_FFI_DataType_TOKEN, "dtype TOKEN");

/* The error handed out when there is no memory for one: a NULL error reads
 * as success, so a failure must never become NULL.  It lives for the
 * process; destroying it does nothing. */
static union {
  XLA_FFI_Error error;
  char bytes[sizeof(XLA_FFI_Error) + 64];
} oom;
static pthread_once_t oom_once = PTHREAD_ONCE_INIT;
static const char oom_message[] = "out of memory (for an error's message)";
_Static_assert(sizeof oom_message <= 64, "oom message fits");

static void oom_init(void) {
  oom.error.code = XLA_FFI_Error_Code_RESOURCE_EXHAUSTED;
  memcpy(oom.error.message, oom_message, sizeof oom_message);
}

XLA_FFI_Error* ccshim__oom_error(void) {
  pthread_once(&oom_once, oom_init);
  return &oom.error;
}

void ccshim__error_destroy(XLA_FFI_Error* e) {
  if (e != &oom.error) free(e);
}

static XLA_FFI_Error* error_vnew(XLA_FFI_Error_Code code, const char* fmt, va_list ap) {
  va_list copy;
  va_copy(copy, ap);
  int n = vsnprintf(NULL, 0, fmt, copy);
  va_end(copy);
  if (n < 0) n = 0;
  XLA_FFI_Error* e = malloc(sizeof *e + (size_t)n + 1);
  if (e == NULL) return ccshim__oom_error();
  e->code = code;
  vsnprintf(e->message, (size_t)n + 1, fmt, ap);
  return e;
}

XLA_FFI_Error* ccshim__error_new(XLA_FFI_Error_Code code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  XLA_FFI_Error* e = error_vnew(code, fmt, ap);
  va_end(ap);
  return e;
}

static XLA_FFI_Error* size_error(const char* name, size_t expected, size_t actual) {
  return ccshim__error_new(XLA_FFI_Error_Code_INVALID_ARGUMENT,
                           "Unexpected %s size: expected %zu, got %zu. Check installed software "
                           "versions. The framework XLA FFI API version is %d.%d.",
                           name, expected, actual, XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR);
}

static XLA_FFI_Error* null_error(const char* function, const char* what) {
  return ccshim__error_new(XLA_FFI_Error_Code_INVALID_ARGUMENT, "%s: %s is NULL", function, what);
}

/* The checks every context service starts with. */
#define CHECK_ARGS(args, type)                                                \
  do {                                                                        \
    if ((args) == NULL) return null_error(#type, "args");                     \
    if ((args)->struct_size < type##_Args_STRUCT_SIZE)                        \
      return size_error(#type, type##_Args_STRUCT_SIZE, (args)->struct_size); \
  } while (0)

#define CHECK_CTX(args, type)                                               \
  do {                                                                      \
    if ((args)->ctx == NULL || (args)->ctx->magic != CCSHIM__CONTEXT_MAGIC) \
      return ccshim__error_new(XLA_FFI_Error_Code_INVALID_ARGUMENT,         \
                               "%s: ctx is NULL or not a ccshim invoke "    \
                               "context",                                   \
                               #type);                                      \
  } while (0)

static int valid_code(int code) { return code >= 0 && code <= 16; }

static XLA_FFI_Error* Error_Create(XLA_FFI_Error_Create_Args* args) {
  CHECK_ARGS(args, XLA_FFI_Error_Create);
  int code = (int)args->errc;
  /* Codes outside 0..16 are undefined behaviour in XLA; here they become
   * UNKNOWN rather than something a caller cannot read. */
  return ccshim__error_new(valid_code(code) ? (XLA_FFI_Error_Code)code : XLA_FFI_Error_Code_UNKNOWN,
                           "%s", args->message ? args->message : "");
}

static void Error_GetDetails(XLA_FFI_Error_GetDetails_Args* args) {
  if (args == NULL || args->error == NULL) return;
  if (args->struct_size == CCSHIM_FFI_ERROR_GETMESSAGE_ARGS_SIZE_V0_1) {
    /* 0.1-0.3 callers: GetMessage had no errc field; write message only. */
    args->message = args->error->message;
    return;
  }
  if (args->struct_size < XLA_FFI_Error_GetDetails_Args_STRUCT_SIZE) {
    fprintf(stderr,
            "ccshim: Unexpected XLA_FFI_Error_GetDetails size: "
            "expected %d, got %zu\n",
            (int)XLA_FFI_Error_GetDetails_Args_STRUCT_SIZE, args->struct_size);
    return;
  }
  args->message = args->error->message;
  args->errc = args->error->code;
}

static void Error_Destroy(XLA_FFI_Error_Destroy_Args* args) {
  if (args == NULL) return;
  if (args->struct_size < XLA_FFI_Error_Destroy_Args_STRUCT_SIZE)
    fprintf(stderr,
            "ccshim: Unexpected XLA_FFI_Error_Destroy size: "
            "expected %d, got %zu\n",
            (int)XLA_FFI_Error_Destroy_Args_STRUCT_SIZE, args->struct_size);
  ccshim__error_destroy(args->error); /* XLA destroys it whatever the size says */
}

/* ---------------------------------------------------------------------------
 * Registration
 * ------------------------------------------------------------------------ */

/* XLA_FFI_Handler_Register_Args of 0.1-0.3: the bundle without `record`. */
typedef struct register_args_v0 {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_ByteSpan name;
  XLA_FFI_ByteSpan platform;
  XLA_FFI_Handler* stages[4];
  XLA_FFI_Handler_Traits traits;
} register_args_v0;

static XLA_FFI_Error* span_string(const char* what, XLA_FFI_ByteSpan span, char** out) {
  *out = NULL;
  if (span.ptr == NULL && span.len > 0) return null_error("XLA_FFI_Handler_Register", what);
  if (span.len > 0 && memchr(span.ptr, '\0', span.len) != NULL)
    return ccshim__error_new(XLA_FFI_Error_Code_INVALID_ARGUMENT,
                             "XLA_FFI_Handler_Register: the %s contains a NUL "
                             "byte",
                             what);
  *out = ccshim__strndup(span.ptr ? span.ptr : "", span.len);
  if (*out == NULL)
    return ccshim__error_new(XLA_FFI_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
  return NULL;
}

static XLA_FFI_Error* Handler_Register(XLA_FFI_Handler_Register_Args* args) {
  if (args == NULL) return null_error("XLA_FFI_Handler_Register", "args");
  XLA_FFI_Handler_Bundle bundle = {NULL, NULL, NULL, NULL, NULL};
  XLA_FFI_Handler_Traits traits;
  if (args->struct_size < CCSHIM_FFI_HANDLER_REGISTER_ARGS_SIZE_V0_1)
    return size_error("XLA_FFI_Handler_Register", CCSHIM_FFI_HANDLER_REGISTER_ARGS_SIZE_V0_1,
                      args->struct_size);
  if (args->struct_size == CCSHIM_FFI_HANDLER_REGISTER_ARGS_SIZE_V0_1) {
    register_args_v0 v0;
    memcpy(&v0, args, CCSHIM_FFI_HANDLER_REGISTER_ARGS_SIZE_V0_1);
    bundle.instantiate = v0.stages[0];
    bundle.prepare = v0.stages[1];
    bundle.initialize = v0.stages[2];
    bundle.execute = v0.stages[3];
    traits = v0.traits;
  } else if (args->struct_size < XLA_FFI_Handler_Register_Args_STRUCT_SIZE) {
    return size_error("XLA_FFI_Handler_Register", XLA_FFI_Handler_Register_Args_STRUCT_SIZE,
                      args->struct_size);
  } else {
    bundle = args->bundle;
    traits = args->traits;
  }
  char *name, *platform;
  XLA_FFI_Error* err = span_string("name", args->name, &name);
  if (err) return err;
  err = span_string("platform", args->platform, &platform);
  if (err) {
    free(name);
    return err;
  }
  XLA_FFI_Error* handler_error = NULL;
  ccshim_status st = ccshim__register(name, platform, &bundle, traits, &handler_error);
  free(name);
  free(platform);
  if (st == CCSHIM_OK) return NULL;
  if (handler_error) return handler_error;
  return ccshim__error_new(st == CCSHIM_ENOMEM ? XLA_FFI_Error_Code_RESOURCE_EXHAUSTED
                                               : XLA_FFI_Error_Code_INVALID_ARGUMENT,
                           "%s", ccshim_last_error());
}

/* ---------------------------------------------------------------------------
 * Types: a process-wide registry of names, ids and deleters.
 * ------------------------------------------------------------------------ */

typedef struct type_entry {
  char* name;
  int64_t id;
  void (*deleter)(void*);
} type_entry;

static pthread_mutex_t types_mu = PTHREAD_MUTEX_INITIALIZER;
static type_entry* types;
static size_t num_types, cap_types;
static int64_t next_type_id = 1;

static type_entry* type_by_name(const char* name) {
  for (size_t i = 0; i < num_types; i++)
    if (strcmp(types[i].name, name) == 0) return &types[i];
  return NULL;
}

static type_entry* type_by_id(int64_t id) {
  for (size_t i = 0; i < num_types; i++)
    if (types[i].id == id) return &types[i];
  return NULL;
}

static XLA_FFI_Error* type_add(const char* name, int64_t id, void (*deleter)(void*)) {
  if (num_types == cap_types) {
    size_t cap = cap_types ? 2 * cap_types : 16;
    type_entry* grown = realloc(types, cap * sizeof *grown);
    if (grown == NULL)
      return ccshim__error_new(XLA_FFI_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
    types = grown;
    cap_types = cap;
  }
  char* copy = ccshim__strndup(name, strlen(name));
  if (copy == NULL)
    return ccshim__error_new(XLA_FFI_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
  types[num_types++] = (type_entry){copy, id, deleter};
  return NULL;
}

static XLA_FFI_Error* Type_Register(XLA_FFI_Type_Register_Args* args) {
  /* XLA checks this size against InvokeContext_Get's constant; both are 40. */
  CHECK_ARGS(args, XLA_FFI_Type_Register);
  if (args->type_id == NULL) return null_error("XLA_FFI_Type_Register", "type_id");
  if (args->type_info == NULL) return null_error("XLA_FFI_Type_Register", "type_info");
  char* name = NULL;
  XLA_FFI_Error* err = NULL;
  if (args->name.ptr == NULL || args->name.len == 0 ||
      memchr(args->name.ptr, '\0', args->name.len) != NULL)
    return ccshim__error_new(XLA_FFI_Error_Code_INVALID_ARGUMENT,
                             "XLA_FFI_Type_Register: the name must be "
                             "non-empty and contain no NUL byte");
  name = ccshim__strndup(args->name.ptr, args->name.len);
  if (name == NULL)
    return ccshim__error_new(XLA_FFI_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
  void (*deleter)(void*) = args->type_info->deleter;

  pthread_mutex_lock(&types_mu);
  type_entry* existing = type_by_name(name);
  int64_t wanted = args->type_id->type_id;
  if (wanted == 0) {
    /* Assign a fresh id, as XLA's TypeRegistry::AssignTypeId does. */
    if (existing != NULL) {
      err = ccshim__error_new(XLA_FFI_Error_Code_INTERNAL,
                              "Type name %s already registered with type id %lld", name,
                              (long long)existing->id);
    } else {
      while (type_by_id(next_type_id) != NULL) next_type_id++;
      int64_t id = next_type_id++;
      err = type_add(name, id, deleter);
      if (err == NULL) args->type_id->type_id = id;
    }
  } else if (existing != NULL) {
    if (existing->id != wanted)
      err = ccshim__error_new(XLA_FFI_Error_Code_INTERNAL,
                              "Type name %s already registered with type id "
                              "%lld vs %lld)",
                              name, (long long)existing->id, (long long)wanted);
  } else {
    err = type_add(name, wanted, deleter);
  }
  pthread_mutex_unlock(&types_mu);
  free(name);
  return err;
}

ccshim_status ccshim__type_deleter(int64_t type_id, void (**deleter)(void*)) {
  pthread_mutex_lock(&types_mu);
  type_entry* t = type_by_id(type_id);
  if (t) *deleter = t->deleter;
  pthread_mutex_unlock(&types_mu);
  return t ? CCSHIM_OK : CCSHIM_ENOENT;
}

/* ---------------------------------------------------------------------------
 * Context services
 * ------------------------------------------------------------------------ */

static XLA_FFI_Error* Stream_Get(XLA_FFI_Stream_Get_Args* args) {
  CHECK_ARGS(args, XLA_FFI_Stream_Get);
  CHECK_CTX(args, XLA_FFI_Stream_Get);
  if (!args->ctx->is_gpu)
    return ccshim__error_new(XLA_FFI_Error_Code_UNIMPLEMENTED,
                             "XLA FFI GPU context is not available");
  if (args->ctx->stream == NULL)
    return ccshim__error_new(XLA_FFI_Error_Code_UNIMPLEMENTED,
                             "XLA FFI GPU stream is not available");
  args->stream = args->ctx->stream;
  return NULL;
}

static XLA_FFI_Error* InvokeContext_Get(XLA_FFI_InvokeContext_Get_Args* args) {
  CHECK_ARGS(args, XLA_FFI_InvokeContext_Get);
  CHECK_CTX(args, XLA_FFI_InvokeContext_Get);
  if (args->type_id == NULL) return null_error("XLA_FFI_InvokeContext_Get", "type_id");
  ccshim_context* ctx = args->ctx;
  int64_t id = args->type_id->type_id;
  XLA_FFI_Error* err = NULL;
  pthread_mutex_lock(&ctx->mu);
  size_t i = 0;
  while (i < ctx->num_user_data && ctx->user_data[i].type_id != id) i++;
  if (i < ctx->num_user_data)
    args->data = ctx->user_data[i].data;
  else
    err = ccshim__error_new(XLA_FFI_Error_Code_NOT_FOUND,
                            "User data with type id %lld not found in "
                            "execution context",
                            (long long)id);
  pthread_mutex_unlock(&ctx->mu);
  return err;
}

static const char* stage_name(int stage) {
  switch (stage) {
    case XLA_FFI_ExecutionStage_INSTANTIATE: return "instantiate";
    case XLA_FFI_ExecutionStage_PREPARE: return "prepare";
    case XLA_FFI_ExecutionStage_INITIALIZE: return "initialize";
    case XLA_FFI_ExecutionStage_EXECUTE: return "execute";
    case XLA_FFI_ExecutionStage_RECORD: return "record";
  }
  return "unknown";
}

/* The State_*_Args layout of 0.2, before `stage`: read as instantiate. */
typedef struct state_args_v02 {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_InvokeContext* ctx;
  XLA_FFI_TypeId* type_id;
  void* state;
} state_args_v02;

static XLA_FFI_Error* state_slot(const char* fn, ccshim_context* ctx, int stage,
                                 ccshim__state** slot) {
  if (ctx == NULL || ctx->magic != CCSHIM__CONTEXT_MAGIC)
    return ccshim__error_new(XLA_FFI_Error_Code_INVALID_ARGUMENT,
                             "%s: ctx is NULL or not a ccshim invoke context", fn);
  if (stage < XLA_FFI_ExecutionStage_INSTANTIATE || stage > XLA_FFI_ExecutionStage_INITIALIZE)
    return ccshim__error_new(XLA_FFI_Error_Code_INVALID_ARGUMENT,
                             "%s: the %s stage (%d) has no state; state "
                             "belongs to instantiate, prepare or initialize",
                             fn, stage_name(stage), stage);
  *slot = &ctx->states[stage];
  return NULL;
}

static XLA_FFI_Error* state_set(ccshim_context* ctx, int stage, XLA_FFI_TypeId* type_id,
                                void* object) {
  ccshim__state* slot = NULL;
  XLA_FFI_Error* err = state_slot("XLA_FFI_State_Set", ctx, stage, &slot);
  if (err) return err;
  if (type_id == NULL) return null_error("XLA_FFI_State_Set", "type_id");
  void (*deleter)(void*) = NULL;
  if (ccshim__type_deleter(type_id->type_id, &deleter) != CCSHIM_OK)
    return ccshim__error_new(XLA_FFI_Error_Code_INTERNAL,
                             "Type id %lld is not registered with a static "
                             "registry",
                             (long long)type_id->type_id);
  if (object == NULL)
    return ccshim__error_new(XLA_FFI_Error_Code_INVALID_ARGUMENT, "State must be not null");
  if (deleter == NULL)
    return ccshim__error_new(XLA_FFI_Error_Code_INVALID_ARGUMENT, "Type info must have a deleter");
  pthread_mutex_lock(&ctx->mu);
  if (slot->object != NULL) {
    err = ccshim__error_new(XLA_FFI_Error_Code_FAILED_PRECONDITION,
                            "State is already set with a type id %lld", (long long)slot->type_id);
  } else {
    slot->type_id = type_id->type_id;
    slot->object = object;
    slot->deleter = deleter;
  }
  pthread_mutex_unlock(&ctx->mu);
  return err;
}

static XLA_FFI_Error* state_get(ccshim_context* ctx, int stage, XLA_FFI_TypeId* type_id,
                                void** out) {
  ccshim__state* slot = NULL;
  XLA_FFI_Error* err = state_slot("XLA_FFI_State_Get", ctx, stage, &slot);
  if (err) return err;
  if (type_id == NULL) return null_error("XLA_FFI_State_Get", "type_id");
  pthread_mutex_lock(&ctx->mu);
  if (slot->object == NULL)
    err = ccshim__error_new(XLA_FFI_Error_Code_NOT_FOUND, "State is not set");
  else if (slot->type_id != type_id->type_id)
    err = ccshim__error_new(XLA_FFI_Error_Code_INVALID_ARGUMENT,
                            "Set state type id %lld does not match the "
                            "requested one %lld",
                            (long long)slot->type_id, (long long)type_id->type_id);
  else
    *out = slot->object;
  pthread_mutex_unlock(&ctx->mu);
  return err;
}

static XLA_FFI_Error* State_Set(XLA_FFI_State_Set_Args* args) {
  if (args == NULL) return null_error("XLA_FFI_State_Set", "args");
  if (args->struct_size == CCSHIM_FFI_STATE_ARGS_SIZE_V0_2) {
    state_args_v02 v;
    memcpy(&v, args, sizeof v);
    return state_set(v.ctx, XLA_FFI_ExecutionStage_INSTANTIATE, v.type_id, v.state);
  }
  CHECK_ARGS(args, XLA_FFI_State_Set);
  return state_set(args->ctx, (int)args->stage, args->type_id, args->state);
}

static XLA_FFI_Error* State_Get(XLA_FFI_State_Get_Args* args) {
  if (args == NULL) return null_error("XLA_FFI_State_Get", "args");
  if (args->struct_size == CCSHIM_FFI_STATE_ARGS_SIZE_V0_2) {
    state_args_v02 v;
    memcpy(&v, args, sizeof v);
    XLA_FFI_Error* err = state_get(v.ctx, XLA_FFI_ExecutionStage_INSTANTIATE, v.type_id, &v.state);
    if (err == NULL) memcpy(args, &v, sizeof v);
    return err;
  }
  CHECK_ARGS(args, XLA_FFI_State_Get);
  return state_get(args->ctx, (int)args->stage, args->type_id, &args->state);
}

static XLA_FFI_Error* DeviceMemory_Allocate(XLA_FFI_DeviceMemory_Allocate_Args* args) {
  CHECK_ARGS(args, XLA_FFI_DeviceMemory_Allocate);
  CHECK_CTX(args, XLA_FFI_DeviceMemory_Allocate);
  ccshim_context* ctx = args->ctx;
  size_t align = args->alignment;
  if (align == 0 || (align & (align - 1)) != 0 || align > 16)
    return ccshim__error_new(XLA_FFI_Error_Code_INVALID_ARGUMENT, "Unsupported alignment: %zu",
                             align);
  if (ctx->is_gpu && ctx->alloc == NULL)
    return ccshim__error_new(XLA_FFI_Error_Code_UNIMPLEMENTED,
                             "No device memory allocator available on this "
                             "platform");
  args->data = NULL;
  if (args->size == 0) return NULL;
  void* p = NULL;
  if (ctx->is_gpu) {
    p = ctx->alloc(ctx->alloc_user, args->size, align);
  } else if (posix_memalign(&p, align < sizeof(void*) ? sizeof(void*) : align, args->size) != 0) {
    p = NULL;
  }
  if (p == NULL)
    return ccshim__error_new(XLA_FFI_Error_Code_RESOURCE_EXHAUSTED,
                             "Failed to allocate %zu bytes of device memory", args->size);
  args->data = p;
  return NULL;
}

static XLA_FFI_Error* DeviceMemory_Free(XLA_FFI_DeviceMemory_Free_Args* args) {
  CHECK_ARGS(args, XLA_FFI_DeviceMemory_Free);
  CHECK_CTX(args, XLA_FFI_DeviceMemory_Free);
  ccshim_context* ctx = args->ctx;
  if (!ctx->is_gpu) {
    free(args->data);
    return NULL;
  }
  if (ctx->free == NULL)
    return ccshim__error_new(XLA_FFI_Error_Code_UNIMPLEMENTED,
                             "No device memory allocator available on this "
                             "platform");
  if (args->data != NULL) ctx->free(ctx->alloc_user, args->data, args->size);
  return NULL;
}

static XLA_FFI_Error* no_pool(const ccshim_context* ctx) {
  if (ctx->is_gpu)
    return ccshim__error_new(XLA_FFI_Error_Code_UNIMPLEMENTED,
                             "XLA FFI CPU context is not available");
  if (ctx->pool == NULL)
    return ccshim__error_new(XLA_FFI_Error_Code_UNIMPLEMENTED,
                             "No intra-op thread pool available on this "
                             "platform");
  return NULL;
}

static XLA_FFI_Error* ThreadPool_Schedule(XLA_FFI_ThreadPool_Schedule_Args* args) {
  CHECK_ARGS(args, XLA_FFI_ThreadPool_Schedule);
  CHECK_CTX(args, XLA_FFI_ThreadPool_Schedule);
  XLA_FFI_Error* err = no_pool(args->ctx);
  if (err) return err;
  if (args->task == NULL) return null_error("XLA_FFI_ThreadPool_Schedule", "task");
  if (ccshim__pool_schedule(args->ctx->pool, args->task, args->data) != 0)
    return ccshim__error_new(XLA_FFI_Error_Code_RESOURCE_EXHAUSTED,
                             "out of memory scheduling a task");
  return NULL;
}

static XLA_FFI_Error* ThreadPool_NumThreads(XLA_FFI_ThreadPool_NumThreads_Args* args) {
  CHECK_ARGS(args, XLA_FFI_ThreadPool_NumThreads);
  CHECK_CTX(args, XLA_FFI_ThreadPool_NumThreads);
  XLA_FFI_Error* err = no_pool(args->ctx);
  if (err) return err;
  if (args->num_threads == NULL) return null_error("XLA_FFI_ThreadPool_NumThreads", "num_threads");
  *args->num_threads = args->ctx->pool->num_threads;
  return NULL;
}

static XLA_FFI_Error* RunId_Get(XLA_FFI_RunId_Get_Args* args) {
  CHECK_ARGS(args, XLA_FFI_RunId_Get);
  CHECK_CTX(args, XLA_FFI_RunId_Get);
  args->run_id = args->ctx->run_id;
  return NULL;
}

static XLA_FFI_Error* DeviceOrdinal_Get(XLA_FFI_DeviceOrdinal_Get_Args* args) {
  CHECK_ARGS(args, XLA_FFI_DeviceOrdinal_Get);
  CHECK_CTX(args, XLA_FFI_DeviceOrdinal_Get);
  args->device_ordinal = args->ctx->device_ordinal;
  return NULL;
}

static XLA_FFI_Error* InvokeContext_FindExtension(XLA_FFI_InvokeContext_FindExtension_Args* args) {
  CHECK_ARGS(args, XLA_FFI_InvokeContext_FindExtension);
  CHECK_CTX(args, XLA_FFI_InvokeContext_FindExtension);
  args->extension = NULL;
  for (const XLA_FFI_Extension* e = args->ctx->extensions; e; e = e->next) {
    if (e->id.extension_type == args->extension_type) {
      args->extension = e;
      break;
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------------------
 * Futures, completed by handlers (possibly from other threads) and awaited
 * by invoke.
 * ------------------------------------------------------------------------ */

static XLA_FFI_Error* Future_Create(XLA_FFI_Future_Create_Args* args) {
  CHECK_ARGS(args, XLA_FFI_Future_Create);
  XLA_FFI_Future* f = calloc(1, sizeof *f);
  if (f == NULL) return ccshim__error_new(XLA_FFI_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->done, NULL);
  args->future = f;
  return NULL;
}

static XLA_FFI_Error* future_complete(XLA_FFI_Future* f, ccshim__future_state state,
                                      XLA_FFI_Error* error) {
  XLA_FFI_Error* err = NULL;
  pthread_mutex_lock(&f->mu);
  if (f->state != CCSHIM__FUTURE_PENDING) {
    err = ccshim__error_new(XLA_FFI_Error_Code_FAILED_PRECONDITION,
                            "The future is already completed");
  } else {
    f->state = state;
    f->error = error;
    pthread_cond_broadcast(&f->done);
  }
  pthread_mutex_unlock(&f->mu);
  return err;
}

static XLA_FFI_Error* Future_SetAvailable(XLA_FFI_Future_SetAvailable_Args* args) {
  CHECK_ARGS(args, XLA_FFI_Future_SetAvailable);
  if (args->future == NULL) return null_error("XLA_FFI_Future_SetAvailable", "future");
  return future_complete(args->future, CCSHIM__FUTURE_AVAILABLE, NULL);
}

static XLA_FFI_Error* Future_SetError(XLA_FFI_Future_SetError_Args* args) {
  CHECK_ARGS(args, XLA_FFI_Future_SetError);
  if (args->future == NULL) return null_error("XLA_FFI_Future_SetError", "future");
  if (args->error == NULL || args->error->code == XLA_FFI_Error_Code_OK)
    return ccshim__error_new(XLA_FFI_Error_Code_INVALID_ARGUMENT, "Error must not be null or OK");
  XLA_FFI_Error* err = future_complete(args->future, CCSHIM__FUTURE_ERROR, args->error);
  if (err) ccshim__error_destroy(args->error); /* ownership passed to us either way */
  return err;
}

/* ---------------------------------------------------------------------------
 * The table
 * ------------------------------------------------------------------------ */

static const XLA_FFI_Api api = {
    XLA_FFI_Api_STRUCT_SIZE,
    NULL,
    {XLA_FFI_Api_Version_STRUCT_SIZE, NULL, XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR},
    NULL, /* internal_api: XLA-private, nothing here */
    Error_Create,
    Error_GetDetails,
    Error_Destroy,
    Handler_Register,
    Stream_Get,
    Type_Register,
    InvokeContext_Get,
    State_Set,
    State_Get,
    DeviceMemory_Allocate,
    DeviceMemory_Free,
    ThreadPool_Schedule,
    ThreadPool_NumThreads,
    Future_Create,
    Future_SetAvailable,
    Future_SetError,
    RunId_Get,
    DeviceOrdinal_Get,
    InvokeContext_FindExtension,
};

const XLA_FFI_Api* ccshim_ffi_api(void) { return &api; }

XLA_FFI_Error_Code ccshim_error_code(const XLA_FFI_Error* error) {
  return error ? error->code : XLA_FFI_Error_Code_OK;
}

const char* ccshim_error_message(const XLA_FFI_Error* error) { return error ? error->message : ""; }

void ccshim_error_free(XLA_FFI_Error* error) { ccshim__error_destroy(error); }

const char* ccshim_error_code_name(XLA_FFI_Error_Code code) {
  static const char* const names[] = {"OK",
                                      "CANCELLED",
                                      "UNKNOWN",
                                      "INVALID_ARGUMENT",
                                      "DEADLINE_EXCEEDED",
                                      "NOT_FOUND",
                                      "ALREADY_EXISTS",
                                      "PERMISSION_DENIED",
                                      "RESOURCE_EXHAUSTED",
                                      "FAILED_PRECONDITION",
                                      "ABORTED",
                                      "OUT_OF_RANGE",
                                      "UNIMPLEMENTED",
                                      "INTERNAL",
                                      "UNAVAILABLE",
                                      "DATA_LOSS",
                                      "UNAUTHENTICATED"};
  return valid_code((int)code) ? names[code] : "UNKNOWN_CODE";
}
