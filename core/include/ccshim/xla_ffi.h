/*
 * ccshim/xla_ffi.h -- ccshim's own declaration of the XLA FFI C ABI, API 0.4.
 *
 * Written from the documented facts of openxla/xla `xla/ffi/api/c_api.h`
 * (XLA commit 753e5e56, API 0.4; older layouts from the c_api.h each JAX
 * release pinned, and xla/ffi/ffi_api.cc for what XLA accepts) and kept
 * binary-compatible with it: every struct, enum and function type carries
 * upstream's exact spelling, and tests/test_abi_layout.c pins every size,
 * offset and enum value to literal numbers while tests/test_abi_drift.c
 * compares them with the header jaxlib ships.
 *
 * Plain C11; compiles alone with -std=c11 -Wpedantic and as C++17.  Include
 * either this header or upstream's c_api.h in one translation unit, not both.
 *
 * Conventions that hold throughout (c_api.h's own header comment):
 *  - every versioned struct starts with `size_t struct_size`, and the size a
 *    caller must write is XLA_FFI_STRUCT_SIZE(type, last field): the offset of
 *    the last field plus its size, which excludes trailing padding;
 *  - the second field is the internal extension pointer, NULL except in the
 *    metadata query;
 *  - an error returned by a handler belongs to the runtime; an error returned
 *    by an API function belongs to its caller (destroy it with Error_Destroy).
 */
#ifndef CCSHIM_XLA_FFI_H
#define CCSHIM_XLA_FFI_H

#include <stddef.h>
#include <stdint.h>

#define XLA_FFI_STRUCT_SIZE(struct_type, last_field) \
  (offsetof(struct_type, last_field) + sizeof(((struct_type*)0)->last_field))

/* Declares `typedef struct sname sname;` and the constant sname_STRUCT_SIZE. */
#define XLA_FFI_DEFINE_STRUCT_TRAITS(sname, last_field) \
  typedef struct sname sname;                           \
  enum { sname##_STRUCT_SIZE = XLA_FFI_STRUCT_SIZE(sname, last_field) }

/* The API version this header describes.  A handler reports the version it
 * needs in the metadata query, which need not be this one: XLA accepts any
 * version from 0.1 up to its own (ccshim's adapters report 0.1). */
#define XLA_FFI_API_MAJOR 0
#define XLA_FFI_API_MINOR 4

#ifdef __cplusplus
extern "C" {
#endif

typedef struct XLA_FFI_Api XLA_FFI_Api;
typedef struct XLA_FFI_InternalApi XLA_FFI_InternalApi; /* private to XLA */

/* ---------------------------------------------------------------------------
 * Extensions.  The internal extension list hangs off a call frame (only the
 * metadata query uses it); the public XLA_FFI_Extension list (new in 0.4)
 * hangs off the invoke context and is found with InvokeContext_FindExtension.
 * In API 0.1-0.3 XLA_FFI_InternalExtension was called XLA_FFI_Extension_Base.
 * ------------------------------------------------------------------------ */

typedef enum {
  XLA_FFI_Extension_Metadata = 1,
} XLA_FFI_InternalExtension_Type;

typedef struct XLA_FFI_InternalExtension {
  size_t struct_size;
  XLA_FFI_InternalExtension_Type type;
  struct XLA_FFI_InternalExtension* next;
} XLA_FFI_InternalExtension;
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_InternalExtension, next); /* 24 */

typedef struct XLA_FFI_ExtensionId {
  int64_t extension_type;
  int32_t major_version;
  int32_t minor_version;
} XLA_FFI_ExtensionId;
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_ExtensionId, minor_version); /* 16 */

typedef struct XLA_FFI_Extension XLA_FFI_Extension;
struct XLA_FFI_Extension {
  size_t struct_size;
  XLA_FFI_ExtensionId id;
  const XLA_FFI_Extension* next;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Extension, next); /* 32 */

struct XLA_FFI_Api_Version {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  int major_version; /* out */
  int minor_version; /* out */
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Api_Version, minor_version); /* 24 */

/* ---------------------------------------------------------------------------
 * Errors.  Codes are absl::StatusCode's numbers; only 0..16 are defined, and
 * an error made with code OK reads as success.
 * ------------------------------------------------------------------------ */

typedef struct XLA_FFI_Error XLA_FFI_Error; /* opaque; owned as described above */

typedef enum {
  XLA_FFI_Error_Code_OK = 0,
  XLA_FFI_Error_Code_CANCELLED = 1,
  XLA_FFI_Error_Code_UNKNOWN = 2,
  XLA_FFI_Error_Code_INVALID_ARGUMENT = 3,
  XLA_FFI_Error_Code_DEADLINE_EXCEEDED = 4,
  XLA_FFI_Error_Code_NOT_FOUND = 5,
  XLA_FFI_Error_Code_ALREADY_EXISTS = 6,
  XLA_FFI_Error_Code_PERMISSION_DENIED = 7,
  XLA_FFI_Error_Code_RESOURCE_EXHAUSTED = 8,
  XLA_FFI_Error_Code_FAILED_PRECONDITION = 9,
  XLA_FFI_Error_Code_ABORTED = 10,
  XLA_FFI_Error_Code_OUT_OF_RANGE = 11,
  XLA_FFI_Error_Code_UNIMPLEMENTED = 12,
  XLA_FFI_Error_Code_INTERNAL = 13,
  XLA_FFI_Error_Code_UNAVAILABLE = 14,
  XLA_FFI_Error_Code_DATA_LOSS = 15,
  XLA_FFI_Error_Code_UNAUTHENTICATED = 16
} XLA_FFI_Error_Code;

struct XLA_FFI_Error_Create_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  const char* message; /* NUL-terminated, never NULL; copied by the runtime */
  XLA_FFI_Error_Code errc;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Error_Create_Args, errc); /* 28 */

typedef XLA_FFI_Error* XLA_FFI_Error_Create(XLA_FFI_Error_Create_Args* args);

/* Was XLA_FFI_Error_GetMessage_Args (no errc, STRUCT_SIZE 32) before 0.4;
 * XLA still accepts that size and then writes only `message`. */
struct XLA_FFI_Error_GetDetails_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_Error* error;
  const char* message;     /* out; owned by the error */
  XLA_FFI_Error_Code errc; /* out */
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Error_GetDetails_Args, errc); /* 36 */

typedef void XLA_FFI_Error_GetDetails(XLA_FFI_Error_GetDetails_Args* args);

struct XLA_FFI_Error_Destroy_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_Error* error;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Error_Destroy_Args, error); /* 24 */

typedef void XLA_FFI_Error_Destroy(XLA_FFI_Error_Destroy_Args* args);

/* ---------------------------------------------------------------------------
 * Data types: the numbers of xla::PrimitiveType.  13 (TUPLE) and 14
 * (OPAQUE_TYPE) exist there but have no FFI name.
 * ------------------------------------------------------------------------ */

typedef enum {
  XLA_FFI_DataType_INVALID = 0,
  XLA_FFI_DataType_PRED = 1,
  XLA_FFI_DataType_S1 = 30,
  XLA_FFI_DataType_S2 = 26,
  XLA_FFI_DataType_S4 = 21,
  XLA_FFI_DataType_S8 = 2,
  XLA_FFI_DataType_S16 = 3,
  XLA_FFI_DataType_S32 = 4,
  XLA_FFI_DataType_S64 = 5,
  XLA_FFI_DataType_U1 = 31,
  XLA_FFI_DataType_U2 = 27,
  XLA_FFI_DataType_U4 = 22,
  XLA_FFI_DataType_U8 = 6,
  XLA_FFI_DataType_U16 = 7,
  XLA_FFI_DataType_U32 = 8,
  XLA_FFI_DataType_U64 = 9,
  XLA_FFI_DataType_F16 = 10,
  XLA_FFI_DataType_F32 = 11,
  XLA_FFI_DataType_F64 = 12,
  XLA_FFI_DataType_BF16 = 16,
  XLA_FFI_DataType_C64 = 15,
  XLA_FFI_DataType_C128 = 18,
  XLA_FFI_DataType_TOKEN = 17,
  XLA_FFI_DataType_F8E5M2 = 19,
  XLA_FFI_DataType_F8E3M4 = 29,
  XLA_FFI_DataType_F8E4M3 = 28,
  XLA_FFI_DataType_F8E4M3FN = 20,
  XLA_FFI_DataType_F8E4M3B11FNUZ = 23,
  XLA_FFI_DataType_F8E5M2FNUZ = 24,
  XLA_FFI_DataType_F8E4M3FNUZ = 25,
  XLA_FFI_DataType_F4E2M1FN = 32,
  XLA_FFI_DataType_F8E8M0FNU = 33
} XLA_FFI_DataType;

/* ---------------------------------------------------------------------------
 * What a call carries: buffers, and attributes of four kinds.
 * ------------------------------------------------------------------------ */

/* A dense array in the layout the custom call asked for (row-major from JAX).
 * Tokens have dtype TOKEN, rank 0 and data NULL. */
struct XLA_FFI_Buffer {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_DataType dtype;
  void* data; /* device or host address */
  int64_t rank;
  int64_t* dims; /* `rank` entries */
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Buffer, dims); /* 48 */

typedef enum {
  XLA_FFI_ArgType_BUFFER = 1,
} XLA_FFI_ArgType;

typedef enum {
  XLA_FFI_RetType_BUFFER = 1,
} XLA_FFI_RetType;

typedef enum {
  XLA_FFI_AttrType_ARRAY = 1,
  XLA_FFI_AttrType_DICTIONARY = 2,
  XLA_FFI_AttrType_SCALAR = 3,
  XLA_FFI_AttrType_STRING = 4,
} XLA_FFI_AttrType;

/* The per-call context.  Called XLA_FFI_ExecutionContext before 0.4, which
 * remains as an alias. */
typedef struct XLA_FFI_InvokeContext XLA_FFI_InvokeContext;
typedef XLA_FFI_InvokeContext XLA_FFI_ExecutionContext;

/* Pointer and length; NOT promised to be NUL-terminated. */
typedef struct XLA_FFI_ByteSpan {
  const char* ptr;
  size_t len;
} XLA_FFI_ByteSpan;

typedef struct XLA_FFI_Scalar {
  XLA_FFI_DataType dtype;
  void* value; /* one value of `dtype`; PRED is a one-byte bool */
} XLA_FFI_Scalar;

typedef struct XLA_FFI_Array {
  XLA_FFI_DataType dtype;
  size_t size; /* element count */
  void* data;  /* contiguous elements */
} XLA_FFI_Array;

/* ---------------------------------------------------------------------------
 * Types registered with the runtime (for State and user data).
 * ------------------------------------------------------------------------ */

typedef struct XLA_FFI_TypeId {
  int64_t type_id; /* 0 is "unknown": ask the runtime to assign one */
} XLA_FFI_TypeId;

#ifdef __cplusplus
#define XLA_FFI_UNKNOWN_TYPE_ID \
  XLA_FFI_TypeId { 0 }
#else
#define XLA_FFI_UNKNOWN_TYPE_ID ((XLA_FFI_TypeId){0})
#endif

/* The 0.2+ layout; in 0.1 the struct held only the deleter. */
typedef struct XLA_FFI_TypeInfo {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  void (*deleter)(void* object);
} XLA_FFI_TypeInfo;
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_TypeInfo, deleter); /* 24 */

/* ---------------------------------------------------------------------------
 * Futures: a handler that finishes asynchronously stores one in
 * call_frame->future and completes it later.
 * ------------------------------------------------------------------------ */

typedef struct XLA_FFI_Future XLA_FFI_Future;

/* Upstream names extension_start as the last field, so the size is 16. */
struct XLA_FFI_Future_Create_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_Future* future; /* out */
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Future_Create_Args, extension_start); /* 16 */

typedef XLA_FFI_Error* XLA_FFI_Future_Create(XLA_FFI_Future_Create_Args* args);

struct XLA_FFI_Future_SetAvailable_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_Future* future;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Future_SetAvailable_Args, future); /* 24 */

typedef XLA_FFI_Error* XLA_FFI_Future_SetAvailable(XLA_FFI_Future_SetAvailable_Args* args);

struct XLA_FFI_Future_SetError_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_Future* future;
  XLA_FFI_Error* error; /* ownership passes to the runtime */
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Future_SetError_Args, error); /* 32 */

typedef XLA_FFI_Error* XLA_FFI_Future_SetError(XLA_FFI_Future_SetError_Args* args);

/* ---------------------------------------------------------------------------
 * The call frame.
 * ------------------------------------------------------------------------ */

/* RECORD is new in 0.4.  Early 0.0 numbered PREPARE 0, INITIALIZE 1,
 * EXECUTE 2; these are the numbers of 0.1 and later. */
typedef enum {
  XLA_FFI_ExecutionStage_INSTANTIATE = 0,
  XLA_FFI_ExecutionStage_PREPARE = 1,
  XLA_FFI_ExecutionStage_INITIALIZE = 2,
  XLA_FFI_ExecutionStage_EXECUTE = 3,
  XLA_FFI_ExecutionStage_RECORD = 4,
} XLA_FFI_ExecutionStage;

struct XLA_FFI_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  int64_t size;
  XLA_FFI_ArgType* types; /* `size` entries */
  void** args;            /* `size` entries, each an XLA_FFI_Buffer* */
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Args, args); /* 40 */

struct XLA_FFI_Rets {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  int64_t size;
  XLA_FFI_RetType* types; /* `size` entries */
  void** rets;            /* `size` entries, each an XLA_FFI_Buffer* */
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Rets, rets); /* 40 */

/* Attributes sorted by name, byte-wise.  attrs[i] points at an
 * XLA_FFI_ByteSpan (STRING), XLA_FFI_Scalar (SCALAR), XLA_FFI_Array (ARRAY)
 * or a nested, itself sorted, XLA_FFI_Attrs (DICTIONARY). */
struct XLA_FFI_Attrs {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  int64_t size;
  XLA_FFI_AttrType* types;  /* `size` entries */
  XLA_FFI_ByteSpan** names; /* `size` entries */
  void** attrs;             /* `size` entries */
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Attrs, attrs); /* 48 */

/* STRUCT_SIZE stops at `attrs` (168 on LP64), not at `future`: runtimes from
 * before 2024-09 have no `future`, so only an asynchronous handler may write
 * it, and upstream's C++ bindings require struct_size == 168 exactly. */
struct XLA_FFI_CallFrame {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  const XLA_FFI_Api* api;
  XLA_FFI_InvokeContext* ctx;
  XLA_FFI_ExecutionStage stage;
  XLA_FFI_Args args;
  XLA_FFI_Rets rets;
  XLA_FFI_Attrs attrs;
  XLA_FFI_Future* future; /* out */
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_CallFrame, attrs); /* 168 */

/* A handler is a function type; handler pointers are XLA_FFI_Handler*. */
typedef XLA_FFI_Error* XLA_FFI_Handler(XLA_FFI_CallFrame* call_frame);

/* ---------------------------------------------------------------------------
 * Registration.
 * ------------------------------------------------------------------------ */

/* `record` is new in 0.4; the bundle was 32 bytes before. */
typedef struct XLA_FFI_Handler_Bundle {
  XLA_FFI_Handler* instantiate; /* optional */
  XLA_FFI_Handler* prepare;     /* optional */
  XLA_FFI_Handler* initialize;  /* optional */
  XLA_FFI_Handler* execute;     /* required */
  XLA_FFI_Handler* record;      /* optional */
} XLA_FFI_Handler_Bundle;

enum XLA_FFI_Handler_TraitsBits {
  XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE = 1u << 0,
};

typedef uint32_t XLA_FFI_Handler_Traits;

/* 92 in 0.4; the 0.1-0.3 layout (no `record`, traits at 80) is 84 bytes and
 * is still read as such when struct_size is exactly 84. */
struct XLA_FFI_Handler_Register_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_ByteSpan name;
  XLA_FFI_ByteSpan platform;
  XLA_FFI_Handler_Bundle bundle;
  XLA_FFI_Handler_Traits traits;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Handler_Register_Args, traits); /* 92 */

typedef XLA_FFI_Error* XLA_FFI_Handler_Register(XLA_FFI_Handler_Register_Args* args);

/* STRUCT_SIZE stops at type_id (40); type_info was added in 0.2. */
struct XLA_FFI_Type_Register_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_ByteSpan name;
  XLA_FFI_TypeId* type_id; /* in-out */
  const XLA_FFI_TypeInfo* type_info;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Type_Register_Args, type_id); /* 40 */

typedef XLA_FFI_Error* XLA_FFI_Type_Register(XLA_FFI_Type_Register_Args* args);

/* ---------------------------------------------------------------------------
 * Services a handler reaches through the context.
 * ------------------------------------------------------------------------ */

struct XLA_FFI_InvokeContext_FindExtension_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_InvokeContext* ctx;
  int64_t extension_type;
  const XLA_FFI_Extension* extension; /* out; NULL when absent */
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_InvokeContext_FindExtension_Args, extension); /* 40 */

typedef XLA_FFI_Error* XLA_FFI_InvokeContext_FindExtension(
    XLA_FFI_InvokeContext_FindExtension_Args* args);

/* Was XLA_FFI_ExecutionContext_Get_Args before 0.4 (same layout). */
struct XLA_FFI_InvokeContext_Get_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_InvokeContext* ctx;
  XLA_FFI_TypeId* type_id;
  void* data; /* out */
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_InvokeContext_Get_Args, data); /* 40 */

typedef XLA_FFI_Error* XLA_FFI_InvokeContext_Get(XLA_FFI_InvokeContext_Get_Args* args);

/* `stage` was added in 0.3; a struct_size of 40 (the 0.2 layout without it)
 * is read as the instantiate stage. */
struct XLA_FFI_State_Set_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_InvokeContext* ctx;
  XLA_FFI_ExecutionStage stage;
  XLA_FFI_TypeId* type_id;
  void* state; /* ownership passes to the runtime, which calls the deleter */
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_State_Set_Args, state); /* 48 */

typedef XLA_FFI_Error* XLA_FFI_State_Set(XLA_FFI_State_Set_Args* args);

struct XLA_FFI_State_Get_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_InvokeContext* ctx;
  XLA_FFI_ExecutionStage stage;
  XLA_FFI_TypeId* type_id;
  void* state; /* out; borrowed */
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_State_Get_Args, state); /* 48 */

typedef XLA_FFI_Error* XLA_FFI_State_Get(XLA_FFI_State_Get_Args* args);

struct XLA_FFI_Stream_Get_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_InvokeContext* ctx;
  void* stream; /* out: CUstream or hipStream_t */
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Stream_Get_Args, stream); /* 32 */

typedef XLA_FFI_Error* XLA_FFI_Stream_Get(XLA_FFI_Stream_Get_Args* args);

struct XLA_FFI_DeviceMemory_Allocate_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_InvokeContext* ctx;
  size_t size;
  size_t alignment; /* a power of two, at most 16 */
  void* data;       /* out */
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_DeviceMemory_Allocate_Args, data); /* 48 */

typedef XLA_FFI_Error* XLA_FFI_DeviceMemory_Allocate(XLA_FFI_DeviceMemory_Allocate_Args* args);

struct XLA_FFI_DeviceMemory_Free_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_InvokeContext* ctx;
  size_t size;
  void* data;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_DeviceMemory_Free_Args, data); /* 40 */

typedef XLA_FFI_Error* XLA_FFI_DeviceMemory_Free(XLA_FFI_DeviceMemory_Free_Args* args);

typedef void XLA_FFI_Task(void* data);

struct XLA_FFI_ThreadPool_Schedule_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_InvokeContext* ctx;
  XLA_FFI_Task* task;
  void* data;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_ThreadPool_Schedule_Args, data); /* 40 */

typedef XLA_FFI_Error* XLA_FFI_ThreadPool_Schedule(XLA_FFI_ThreadPool_Schedule_Args* args);

struct XLA_FFI_ThreadPool_NumThreads_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_InvokeContext* ctx;
  int64_t* num_threads; /* out */
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_ThreadPool_NumThreads_Args, num_threads); /* 32 */

typedef XLA_FFI_Error* XLA_FFI_ThreadPool_NumThreads(XLA_FFI_ThreadPool_NumThreads_Args* args);

struct XLA_FFI_RunId_Get_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_InvokeContext* ctx;
  int64_t run_id; /* out */
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_RunId_Get_Args, run_id); /* 32 */

typedef XLA_FFI_Error* XLA_FFI_RunId_Get(XLA_FFI_RunId_Get_Args* args);

struct XLA_FFI_DeviceOrdinal_Get_Args {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_InvokeContext* ctx;
  int32_t device_ordinal; /* out */
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_DeviceOrdinal_Get_Args, device_ordinal); /* 28 */

typedef XLA_FFI_Error* XLA_FFI_DeviceOrdinal_Get(XLA_FFI_DeviceOrdinal_Get_Args* args);

/* ---------------------------------------------------------------------------
 * The metadata query (XLA's xla/ffi/invoke.cc, api.h's Ffi::Call).  At
 * registration the runtime
 * calls the execute handler once with extension_start pointing at an
 * XLA_FFI_Metadata_Extension, ctx NULL, no buffers and (JAX <= 0.8) api NULL.
 * The handler fills api_version and traits and returns NULL, touching nothing
 * else.  state_type_id lies beyond STRUCT_SIZE: write it only when stateful.
 * ------------------------------------------------------------------------ */

struct XLA_FFI_Metadata {
  size_t struct_size; /* note: no extension field */
  XLA_FFI_Api_Version api_version;
  XLA_FFI_Handler_Traits traits;
  XLA_FFI_TypeId state_type_id;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Metadata, traits); /* 36 */

struct XLA_FFI_Metadata_Extension {
  XLA_FFI_InternalExtension extension_base;
  XLA_FFI_Metadata* metadata;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Metadata_Extension, metadata); /* 32 */

/* Each field of the table has its function type's name.  In C++ the type is
 * named with a leading :: so that declaring the field does not change what
 * the unqualified name means inside the class (g++ -Wpedantic refuses that,
 * and refuses upstream's header for it). */
#ifdef __cplusplus
#define CCSHIM_FFI_FN(fn_type) ::fn_type*
#else
#define CCSHIM_FFI_FN(fn_type) fn_type*
#endif

/* ---------------------------------------------------------------------------
 * The API table.  Only entries 0-4 (offsets 48-80) have kept their offsets in
 * every release; ThreadPool_NumThreads was inserted mid-table within 0.1.
 * Each field has its function type's name.
 * ------------------------------------------------------------------------ */

struct XLA_FFI_Api {
  size_t struct_size;
  XLA_FFI_InternalExtension* extension_start;
  XLA_FFI_Api_Version api_version; /* the runtime's own version */
  const XLA_FFI_InternalApi* internal_api;

  CCSHIM_FFI_FN(XLA_FFI_Error_Create) XLA_FFI_Error_Create;
  CCSHIM_FFI_FN(XLA_FFI_Error_GetDetails) XLA_FFI_Error_GetDetails;
  CCSHIM_FFI_FN(XLA_FFI_Error_Destroy) XLA_FFI_Error_Destroy;
  CCSHIM_FFI_FN(XLA_FFI_Handler_Register) XLA_FFI_Handler_Register;
  CCSHIM_FFI_FN(XLA_FFI_Stream_Get) XLA_FFI_Stream_Get;
  CCSHIM_FFI_FN(XLA_FFI_Type_Register) XLA_FFI_Type_Register;
  CCSHIM_FFI_FN(XLA_FFI_InvokeContext_Get) XLA_FFI_InvokeContext_Get;
  CCSHIM_FFI_FN(XLA_FFI_State_Set) XLA_FFI_State_Set;
  CCSHIM_FFI_FN(XLA_FFI_State_Get) XLA_FFI_State_Get;
  CCSHIM_FFI_FN(XLA_FFI_DeviceMemory_Allocate) XLA_FFI_DeviceMemory_Allocate;
  CCSHIM_FFI_FN(XLA_FFI_DeviceMemory_Free) XLA_FFI_DeviceMemory_Free;
  CCSHIM_FFI_FN(XLA_FFI_ThreadPool_Schedule) XLA_FFI_ThreadPool_Schedule;
  CCSHIM_FFI_FN(XLA_FFI_ThreadPool_NumThreads) XLA_FFI_ThreadPool_NumThreads;
  CCSHIM_FFI_FN(XLA_FFI_Future_Create) XLA_FFI_Future_Create;
  CCSHIM_FFI_FN(XLA_FFI_Future_SetAvailable) XLA_FFI_Future_SetAvailable;
  CCSHIM_FFI_FN(XLA_FFI_Future_SetError) XLA_FFI_Future_SetError;
  CCSHIM_FFI_FN(XLA_FFI_RunId_Get) XLA_FFI_RunId_Get;
  CCSHIM_FFI_FN(XLA_FFI_DeviceOrdinal_Get) XLA_FFI_DeviceOrdinal_Get;
  CCSHIM_FFI_FN(XLA_FFI_InvokeContext_FindExtension) XLA_FFI_InvokeContext_FindExtension;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Api, XLA_FFI_InvokeContext_FindExtension); /* 200 */

/* ---------------------------------------------------------------------------
 * Sizes of older layouts that XLA still accepts (the 0.1-0.3 structs of
 * c_api.h, read back by xla/ffi/ffi_api.cc).  These are ccshim's names;
 * upstream spells them only inside ffi_api.cc.
 * ------------------------------------------------------------------------ */

/* XLA_FFI_Handler_Register_Args of API 0.1-0.3: read as that layout when
 * struct_size equals it exactly; 85..91 are refused. */
#define CCSHIM_FFI_HANDLER_REGISTER_ARGS_SIZE_V0_1 84
/* XLA_FFI_Error_GetMessage_Args of API 0.1-0.3 (GetDetails without errc). */
#define CCSHIM_FFI_ERROR_GETMESSAGE_ARGS_SIZE_V0_1 32
/* XLA_FFI_State_Set/Get_Args of API 0.2 (no stage): read as instantiate. */
#define CCSHIM_FFI_STATE_ARGS_SIZE_V0_2 40
/* sizeof(XLA_FFI_Handler_Bundle) before `record`. */
#define CCSHIM_FFI_HANDLER_BUNDLE_SIZE_V0_1 32
/* XLA_FFI_Api_STRUCT_SIZE of API 0.1-0.3 (ending at DeviceOrdinal_Get). */
#define CCSHIM_FFI_API_SIZE_V0_1 192

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CCSHIM_XLA_FFI_H */
