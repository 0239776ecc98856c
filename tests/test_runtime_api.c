/*
 * The embedded runtime's XLA_FFI_Api table: every entry present, each
 * function doing what XLA's does, size checks worded as XLA's, the older
 * layouts XLA reads read the same way, and malformed arguments answered with
 * an error instead of a crash.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "ccshim/runtime.h"
#include "check.h"

static const XLA_FFI_Api* api;

/* Checks an error's code and message fragment, then destroys it. */
static void expect_error(XLA_FFI_Error* err, XLA_FFI_Error_Code code, const char* fragment) {
  CHECK(err != NULL);
  CHECK_STR_EQ(ccshim_error_code_name(ccshim_error_code(err)), ccshim_error_code_name(code));
  CHECK_CONTAINS(ccshim_error_message(err), fragment);
  ccshim_error_free(err);
}

static void test_table(void) {
  CHECK_EQ(api->struct_size, 200);
  CHECK_EQ(api->api_version.struct_size, 24);
  CHECK_EQ(api->api_version.major_version, 0);
  CHECK_EQ(api->api_version.minor_version, 4);
  void (*const* fns)(void) = (void (*const*)(void)) & api->XLA_FFI_Error_Create;
  for (int i = 0; i < 19; i++) CHECK(fns[i] != NULL);
}

static void test_errors(void) {
  XLA_FFI_Error_Create_Args c = {XLA_FFI_Error_Create_Args_STRUCT_SIZE, NULL, "disk on fire",
                                 XLA_FFI_Error_Code_DATA_LOSS};
  XLA_FFI_Error* e = api->XLA_FFI_Error_Create(&c);
  XLA_FFI_Error_GetDetails_Args d = {XLA_FFI_Error_GetDetails_Args_STRUCT_SIZE, NULL, e, NULL,
                                     XLA_FFI_Error_Code_OK};
  api->XLA_FFI_Error_GetDetails(&d);
  CHECK_STR_EQ(d.message, "disk on fire");
  CHECK_EQ(d.errc, XLA_FFI_Error_Code_DATA_LOSS);

  /* A 0.1-0.3 caller's GetMessage args (32 bytes) get the message only. */
  XLA_FFI_Error_GetDetails_Args old = {CCSHIM_FFI_ERROR_GETMESSAGE_ARGS_SIZE_V0_1, NULL, e, NULL,
                                       (XLA_FFI_Error_Code)77};
  api->XLA_FFI_Error_GetDetails(&old);
  CHECK_STR_EQ(old.message, "disk on fire");
  CHECK_EQ(old.errc, 77);

  XLA_FFI_Error_Destroy_Args x = {XLA_FFI_Error_Destroy_Args_STRUCT_SIZE, NULL, e};
  api->XLA_FFI_Error_Destroy(&x);

  /* Too small a size, as XLA words it. */
  c.struct_size = 20;
  expect_error(api->XLA_FFI_Error_Create(&c), XLA_FFI_Error_Code_INVALID_ARGUMENT,
               "Unexpected XLA_FFI_Error_Create size: expected 28, got 20");
  /* A NULL message becomes "", an unknown code UNKNOWN. */
  c.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
  c.message = NULL;
  c.errc = (XLA_FFI_Error_Code)99;
  e = api->XLA_FFI_Error_Create(&c);
  CHECK_EQ(ccshim_error_code(e), XLA_FFI_Error_Code_UNKNOWN);
  CHECK_STR_EQ(ccshim_error_message(e), "");
  ccshim_error_free(e);
  expect_error(api->XLA_FFI_Error_Create(NULL), XLA_FFI_Error_Code_INVALID_ARGUMENT,
               "args is NULL");
  api->XLA_FFI_Error_GetDetails(NULL); /* void functions ignore NULL */
  api->XLA_FFI_Error_Destroy(NULL);
}

static void test_stream(void) {
  ccshim_context *host, *cuda, *mine;
  CHECK_OK(ccshim_context_new(NULL, &host));
  ccshim_context_options o = CCSHIM_CONTEXT_OPTIONS_INIT;
  o.platform = "gpu";
  CHECK_OK(ccshim_context_new(&o, &cuda));
  int real_stream;
  o.platform = "ROCM";
  o.stream = &real_stream;
  CHECK_OK(ccshim_context_new(&o, &mine));
  CHECK_STR_EQ(ccshim_context_platform(cuda), "cuda");
  CHECK_STR_EQ(ccshim_context_platform(mine), "rocm");

  XLA_FFI_Stream_Get_Args s = {XLA_FFI_Stream_Get_Args_STRUCT_SIZE, NULL, host, NULL};
  expect_error(api->XLA_FFI_Stream_Get(&s), XLA_FFI_Error_Code_UNIMPLEMENTED,
               "XLA FFI GPU context is not available");
  s.ctx = cuda;
  CHECK(api->XLA_FFI_Stream_Get(&s) == NULL);
  CHECK(s.stream != NULL);
  CHECK_PTR_EQ(s.stream, ccshim_context_stream(cuda));
  s.ctx = mine;
  CHECK(api->XLA_FFI_Stream_Get(&s) == NULL);
  CHECK_PTR_EQ(s.stream, &real_stream);
  s.ctx = NULL;
  expect_error(api->XLA_FFI_Stream_Get(&s), XLA_FFI_Error_Code_INVALID_ARGUMENT, "ctx is NULL");
  /* A pointer that is not a ccshim context is refused, not dereferenced. */
  uint64_t not_a_context[64] = {0};
  s.ctx = (XLA_FFI_InvokeContext*)not_a_context;
  expect_error(api->XLA_FFI_Stream_Get(&s), XLA_FFI_Error_Code_INVALID_ARGUMENT,
               "not a ccshim invoke context");
  s.ctx = cuda;
  s.struct_size = 16;
  expect_error(api->XLA_FFI_Stream_Get(&s), XLA_FFI_Error_Code_INVALID_ARGUMENT,
               "Unexpected XLA_FFI_Stream_Get size: expected 32, got 16");
  ccshim_context_free(host);
  ccshim_context_free(cuda);
  ccshim_context_free(mine);
}

static int deleted;
static void count_delete(void* p) {
  deleted++;
  free(p);
}

static XLA_FFI_TypeId register_type(const char* name, int64_t id) {
  XLA_FFI_TypeId tid = {id};
  XLA_FFI_TypeInfo info = {XLA_FFI_TypeInfo_STRUCT_SIZE, NULL, count_delete};
  XLA_FFI_Type_Register_Args r = {
      XLA_FFI_Type_Register_Args_STRUCT_SIZE, NULL, {name, strlen(name)}, &tid, &info};
  XLA_FFI_Error* e = api->XLA_FFI_Type_Register(&r);
  if (e) {
    fprintf(stderr, "Type_Register(%s): %s\n", name, ccshim_error_message(e));
    exit(1);
  }
  return tid;
}

static void test_types_and_state(void) {
  XLA_FFI_TypeId a = register_type("test.api.A", 0);
  XLA_FFI_TypeId b = register_type("test.api.B", 0);
  CHECK(a.type_id != 0 && b.type_id != 0 && a.type_id != b.type_id);
  XLA_FFI_TypeId fixed = register_type("test.api.Fixed", 424242);
  CHECK_EQ(fixed.type_id, 424242);
  register_type("test.api.Fixed", 424242); /* the same again is fine */

  /* Assigning again, or a different explicit id, is refused as by XLA. */
  XLA_FFI_TypeId again = {0};
  XLA_FFI_TypeInfo info = {XLA_FFI_TypeInfo_STRUCT_SIZE, NULL, count_delete};
  XLA_FFI_Type_Register_Args r = {
      XLA_FFI_Type_Register_Args_STRUCT_SIZE, NULL, {"test.api.A", 10}, &again, &info};
  expect_error(api->XLA_FFI_Type_Register(&r), XLA_FFI_Error_Code_INTERNAL,
               "already registered with type id");
  XLA_FFI_TypeId other = {5};
  r.name = (XLA_FFI_ByteSpan){"test.api.Fixed", 14};
  r.type_id = &other;
  expect_error(api->XLA_FFI_Type_Register(&r), XLA_FFI_Error_Code_INTERNAL,
               "already registered with type id 424242 vs 5");
  r.type_info = NULL;
  expect_error(api->XLA_FFI_Type_Register(&r), XLA_FFI_Error_Code_INVALID_ARGUMENT,
               "type_info is NULL");

  ccshim_context* ctx;
  CHECK_OK(ccshim_context_new(NULL, &ctx));
  int* object = malloc(sizeof *object);
  *object = 7;
  XLA_FFI_State_Set_Args set = {XLA_FFI_State_Set_Args_STRUCT_SIZE, NULL, ctx,
                                XLA_FFI_ExecutionStage_INSTANTIATE, &a,   object};
  CHECK(api->XLA_FFI_State_Set(&set) == NULL);
  expect_error(api->XLA_FFI_State_Set(&set), XLA_FFI_Error_Code_FAILED_PRECONDITION,
               "State is already set");
  XLA_FFI_State_Get_Args get = {XLA_FFI_State_Get_Args_STRUCT_SIZE, NULL, ctx,
                                XLA_FFI_ExecutionStage_INSTANTIATE, &a,   NULL};
  CHECK(api->XLA_FFI_State_Get(&get) == NULL);
  CHECK_PTR_EQ(get.state, object);
  get.type_id = &b;
  expect_error(api->XLA_FFI_State_Get(&get), XLA_FFI_Error_Code_INVALID_ARGUMENT, "does not match");
  get.stage = XLA_FFI_ExecutionStage_PREPARE;
  expect_error(api->XLA_FFI_State_Get(&get), XLA_FFI_Error_Code_NOT_FOUND, "State is not set");
  get.stage = XLA_FFI_ExecutionStage_EXECUTE;
  expect_error(api->XLA_FFI_State_Get(&get), XLA_FFI_Error_Code_INVALID_ARGUMENT,
               "the execute stage (3) has no state");
  XLA_FFI_TypeId unknown = {987654};
  set.type_id = &unknown;
  set.stage = XLA_FFI_ExecutionStage_PREPARE;
  expect_error(api->XLA_FFI_State_Set(&set), XLA_FFI_Error_Code_INTERNAL,
               "Type id 987654 is not registered");

  /* The 0.2 layout (40 bytes, no stage) reads as instantiate. */
  struct {
    size_t struct_size;
    void* ext;
    XLA_FFI_InvokeContext* ctx;
    XLA_FFI_TypeId* type_id;
    void* state;
  } v02 = {CCSHIM_FFI_STATE_ARGS_SIZE_V0_2, NULL, ctx, &a, NULL};
  CHECK(api->XLA_FFI_State_Get((XLA_FFI_State_Get_Args*)&v02) == NULL);
  CHECK_PTR_EQ(v02.state, object);

  /* The runtime owns the state and calls its deleter with the context. */
  deleted = 0;
  ccshim_context_free(ctx);
  CHECK_EQ(deleted, 1);
}

static void test_user_data_and_context_values(void) {
  ccshim_context_options o = CCSHIM_CONTEXT_OPTIONS_INIT;
  o.device_ordinal = 3;
  o.run_id = 123456789;
  ccshim_context* ctx;
  CHECK_OK(ccshim_context_new(&o, &ctx));
  int payload = 5;
  XLA_FFI_TypeId tid = {31337};
  CHECK_OK(ccshim_context_set_user_data(ctx, tid, &payload));
  XLA_FFI_InvokeContext_Get_Args g = {XLA_FFI_InvokeContext_Get_Args_STRUCT_SIZE, NULL, ctx, &tid,
                                      NULL};
  CHECK(api->XLA_FFI_InvokeContext_Get(&g) == NULL);
  CHECK_PTR_EQ(g.data, &payload);
  XLA_FFI_TypeId missing = {31338};
  g.type_id = &missing;
  expect_error(api->XLA_FFI_InvokeContext_Get(&g), XLA_FFI_Error_Code_NOT_FOUND,
               "User data with type id 31338 not found");

  XLA_FFI_RunId_Get_Args run = {XLA_FFI_RunId_Get_Args_STRUCT_SIZE, NULL, ctx, 0};
  CHECK(api->XLA_FFI_RunId_Get(&run) == NULL);
  CHECK_EQ(run.run_id, 123456789);
  XLA_FFI_DeviceOrdinal_Get_Args ord = {XLA_FFI_DeviceOrdinal_Get_Args_STRUCT_SIZE, NULL, ctx, 0};
  CHECK(api->XLA_FFI_DeviceOrdinal_Get(&ord) == NULL);
  CHECK_EQ(ord.device_ordinal, 3);

  XLA_FFI_Extension second = {XLA_FFI_Extension_STRUCT_SIZE, {77, 1, 2}, NULL};
  XLA_FFI_Extension first = {XLA_FFI_Extension_STRUCT_SIZE, {42, 0, 1}, &second};
  ccshim_context_set_extensions(ctx, &first);
  XLA_FFI_InvokeContext_FindExtension_Args f = {
      XLA_FFI_InvokeContext_FindExtension_Args_STRUCT_SIZE, NULL, ctx, 77, NULL};
  CHECK(api->XLA_FFI_InvokeContext_FindExtension(&f) == NULL);
  CHECK_PTR_EQ(f.extension, &second);
  f.extension_type = 5;
  CHECK(api->XLA_FFI_InvokeContext_FindExtension(&f) == NULL);
  CHECK(f.extension == NULL);
  ccshim_context_free(ctx);
}

static int gpu_allocs, gpu_frees;
static void* fake_alloc(void* user, size_t size, size_t alignment) {
  (void)user;
  gpu_allocs++;
  void* p = NULL;
  return posix_memalign(&p, alignment < 8 ? 8 : alignment, size) ? NULL : p;
}
static void fake_free(void* user, void* p, size_t size) {
  (void)user;
  (void)size;
  gpu_frees++;
  free(p);
}

static void test_device_memory(void) {
  ccshim_context* host;
  CHECK_OK(ccshim_context_new(NULL, &host));
  XLA_FFI_DeviceMemory_Allocate_Args a = {
      XLA_FFI_DeviceMemory_Allocate_Args_STRUCT_SIZE, NULL, host, 1000, 16, NULL};
  CHECK(api->XLA_FFI_DeviceMemory_Allocate(&a) == NULL);
  CHECK(a.data != NULL);
  CHECK_EQ((uintptr_t)a.data % 16, 0);
  memset(a.data, 0xab, 1000);
  XLA_FFI_DeviceMemory_Free_Args f = {XLA_FFI_DeviceMemory_Free_Args_STRUCT_SIZE, NULL, host, 1000,
                                      a.data};
  CHECK(api->XLA_FFI_DeviceMemory_Free(&f) == NULL);
  a.alignment = 3;
  expect_error(api->XLA_FFI_DeviceMemory_Allocate(&a), XLA_FFI_Error_Code_INVALID_ARGUMENT,
               "Unsupported alignment: 3");
  a.alignment = 32;
  expect_error(api->XLA_FFI_DeviceMemory_Allocate(&a), XLA_FFI_Error_Code_INVALID_ARGUMENT,
               "Unsupported alignment: 32");

  ccshim_context *bare, *gpu;
  ccshim_context_options o = CCSHIM_CONTEXT_OPTIONS_INIT;
  o.platform = "cuda";
  CHECK_OK(ccshim_context_new(&o, &bare));
  a.ctx = bare;
  a.alignment = 8;
  expect_error(api->XLA_FFI_DeviceMemory_Allocate(&a), XLA_FFI_Error_Code_UNIMPLEMENTED,
               "No device memory allocator available on this platform");
  o.alloc = fake_alloc;
  o.free = fake_free;
  CHECK_OK(ccshim_context_new(&o, &gpu));
  a.ctx = gpu;
  CHECK(api->XLA_FFI_DeviceMemory_Allocate(&a) == NULL);
  f.ctx = gpu;
  f.data = a.data;
  CHECK(api->XLA_FFI_DeviceMemory_Free(&f) == NULL);
  CHECK_EQ(gpu_allocs, 1);
  CHECK_EQ(gpu_frees, 1);
  ccshim_context_free(host);
  ccshim_context_free(bare);
  ccshim_context_free(gpu);
}

static atomic_int tasks_run;
static void task(void* data) {
  (void)data;
  atomic_fetch_add(&tasks_run, 1);
}

static void test_thread_pool(void) {
  ccshim_context *none, *pooled;
  CHECK_OK(ccshim_context_new(NULL, &none));
  ccshim_context_options o = CCSHIM_CONTEXT_OPTIONS_INIT;
  o.num_threads = 2;
  CHECK_OK(ccshim_context_new(&o, &pooled));
  int64_t n = -1;
  XLA_FFI_ThreadPool_NumThreads_Args nt = {XLA_FFI_ThreadPool_NumThreads_Args_STRUCT_SIZE, NULL,
                                           none, &n};
  expect_error(api->XLA_FFI_ThreadPool_NumThreads(&nt), XLA_FFI_Error_Code_UNIMPLEMENTED,
               "No intra-op thread pool available on this platform");
  nt.ctx = pooled;
  CHECK(api->XLA_FFI_ThreadPool_NumThreads(&nt) == NULL);
  CHECK_EQ(n, 2);
  XLA_FFI_ThreadPool_Schedule_Args s = {XLA_FFI_ThreadPool_Schedule_Args_STRUCT_SIZE, NULL, pooled,
                                        task, NULL};
  for (int i = 0; i < 100; i++) CHECK(api->XLA_FFI_ThreadPool_Schedule(&s) == NULL);
  ccshim_context_free(pooled); /* drains the queue, then joins */
  CHECK_EQ(atomic_load(&tasks_run), 100);
  s.ctx = none;
  expect_error(api->XLA_FFI_ThreadPool_Schedule(&s), XLA_FFI_Error_Code_UNIMPLEMENTED,
               "No intra-op thread pool");
  ccshim_context_free(none);
}

/* A handler that completes its future synchronously and checks the misuse
 * answers on the way; invoke then awaits and releases the future. */
static XLA_FFI_Error* future_handler(XLA_FFI_CallFrame* frame) {
  XLA_FFI_Future_Create_Args c = {XLA_FFI_Future_Create_Args_STRUCT_SIZE, NULL, NULL};
  CHECK(api->XLA_FFI_Future_Create(&c) == NULL);
  CHECK(c.future != NULL);
  XLA_FFI_Future_SetError_Args se = {XLA_FFI_Future_SetError_Args_STRUCT_SIZE, NULL, c.future,
                                     NULL};
  expect_error(api->XLA_FFI_Future_SetError(&se), XLA_FFI_Error_Code_INVALID_ARGUMENT,
               "Error must not be null or OK");
  XLA_FFI_Future_SetAvailable_Args sa = {XLA_FFI_Future_SetAvailable_Args_STRUCT_SIZE, NULL,
                                         c.future};
  CHECK(api->XLA_FFI_Future_SetAvailable(&sa) == NULL);
  expect_error(api->XLA_FFI_Future_SetAvailable(&sa), XLA_FFI_Error_Code_FAILED_PRECONDITION,
               "already completed");
  frame->future = c.future;
  return NULL;
}

static void test_futures(void) {
  ccshim_context* ctx;
  CHECK_OK(ccshim_context_new(NULL, &ctx));
  CHECK_OK(ccshim_invoke_handler(future_handler, ctx, XLA_FFI_ExecutionStage_EXECUTE, NULL, NULL));
  ccshim_context_free(ctx);
}

static void test_register_layouts(void) {
  /* Exact 0.1 size 84 reads the old layout; 85..91 and < 84 are refused. */
  XLA_FFI_Handler_Register_Args r;
  memset(&r, 0, sizeof r);
  r.struct_size = 88;
  expect_error(api->XLA_FFI_Handler_Register(&r), XLA_FFI_Error_Code_INVALID_ARGUMENT,
               "Unexpected XLA_FFI_Handler_Register size: expected 92, got 88");
  r.struct_size = 60;
  expect_error(api->XLA_FFI_Handler_Register(&r), XLA_FFI_Error_Code_INVALID_ARGUMENT,
               "expected 84, got 60");
  r.struct_size = XLA_FFI_Handler_Register_Args_STRUCT_SIZE;
  r.name = (XLA_FFI_ByteSpan){"x", 1};
  r.platform = (XLA_FFI_ByteSpan){"host", 4};
  expect_error(api->XLA_FFI_Handler_Register(&r), XLA_FFI_Error_Code_INVALID_ARGUMENT,
               "must provide an execute implementation");
  expect_error(api->XLA_FFI_Handler_Register(NULL), XLA_FFI_Error_Code_INVALID_ARGUMENT,
               "args is NULL");
}

int main(void) {
  api = ccshim_ffi_api();
  test_table();
  test_errors();
  test_stream();
  test_types_and_state();
  test_user_data_and_context_values();
  test_device_memory();
  test_thread_pool();
  test_futures();
  test_register_layouts();
  printf("runtime api: ok\n");
  return 0;
}
