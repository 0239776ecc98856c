/*
 * Pins ccshim's XLA FFI ABI header to literal numbers (LP64): every struct's
 * required size and offsets, the sizes that differ from sizeof, and every
 * enum value.  The numbers are those of XLA's c_api.h at API 0.4
 * (measured by compiling that header; test_abi_drift compares them with
 * the header jaxlib ships); a change to the header that moves
 * any of them fails here.
 */
#include <stddef.h>

#include "ccshim/xla_ffi.h"
#include "check.h"

static int checked;

#define VAL(expr, n)   \
  do {                 \
    CHECK_EQ(expr, n); \
    checked++;         \
  } while (0)
#define SIZE(type, n) VAL(type##_STRUCT_SIZE, n)
#define SIZEOF(type, n) VAL(sizeof(type), n)
#define OFF(type, field, n) VAL(offsetof(type, field), n)

static void structs(void) {
  SIZE(XLA_FFI_InternalExtension, 24);
  OFF(XLA_FFI_InternalExtension, struct_size, 0);
  OFF(XLA_FFI_InternalExtension, type, 8);
  OFF(XLA_FFI_InternalExtension, next, 16);

  SIZE(XLA_FFI_ExtensionId, 16);
  OFF(XLA_FFI_ExtensionId, extension_type, 0);
  OFF(XLA_FFI_ExtensionId, major_version, 8);
  OFF(XLA_FFI_ExtensionId, minor_version, 12);

  SIZE(XLA_FFI_Extension, 32);
  OFF(XLA_FFI_Extension, id, 8);
  OFF(XLA_FFI_Extension, next, 24);

  SIZE(XLA_FFI_Api_Version, 24);
  OFF(XLA_FFI_Api_Version, extension_start, 8);
  OFF(XLA_FFI_Api_Version, major_version, 16);
  OFF(XLA_FFI_Api_Version, minor_version, 20);

  SIZE(XLA_FFI_Error_Create_Args, 28);
  SIZEOF(XLA_FFI_Error_Create_Args, 32);
  OFF(XLA_FFI_Error_Create_Args, message, 16);
  OFF(XLA_FFI_Error_Create_Args, errc, 24);

  SIZE(XLA_FFI_Error_GetDetails_Args, 36);
  OFF(XLA_FFI_Error_GetDetails_Args, error, 16);
  OFF(XLA_FFI_Error_GetDetails_Args, message, 24);
  OFF(XLA_FFI_Error_GetDetails_Args, errc, 32);

  SIZE(XLA_FFI_Error_Destroy_Args, 24);
  OFF(XLA_FFI_Error_Destroy_Args, error, 16);

  SIZE(XLA_FFI_Buffer, 48);
  OFF(XLA_FFI_Buffer, dtype, 16);
  OFF(XLA_FFI_Buffer, data, 24);
  OFF(XLA_FFI_Buffer, rank, 32);
  OFF(XLA_FFI_Buffer, dims, 40);

  SIZEOF(XLA_FFI_ByteSpan, 16);
  OFF(XLA_FFI_ByteSpan, ptr, 0);
  OFF(XLA_FFI_ByteSpan, len, 8);
  SIZEOF(XLA_FFI_Scalar, 16);
  OFF(XLA_FFI_Scalar, dtype, 0);
  OFF(XLA_FFI_Scalar, value, 8);
  SIZEOF(XLA_FFI_Array, 24);
  OFF(XLA_FFI_Array, dtype, 0);
  OFF(XLA_FFI_Array, size, 8);
  OFF(XLA_FFI_Array, data, 16);
  SIZEOF(XLA_FFI_TypeId, 8);

  SIZE(XLA_FFI_TypeInfo, 24);
  OFF(XLA_FFI_TypeInfo, deleter, 16);

  SIZE(XLA_FFI_Future_Create_Args, 16);
  OFF(XLA_FFI_Future_Create_Args, future, 16);
  SIZE(XLA_FFI_Future_SetAvailable_Args, 24);
  OFF(XLA_FFI_Future_SetAvailable_Args, future, 16);
  SIZE(XLA_FFI_Future_SetError_Args, 32);
  OFF(XLA_FFI_Future_SetError_Args, error, 24);

  SIZE(XLA_FFI_Args, 40);
  OFF(XLA_FFI_Args, size, 16);
  OFF(XLA_FFI_Args, types, 24);
  OFF(XLA_FFI_Args, args, 32);
  SIZE(XLA_FFI_Rets, 40);
  OFF(XLA_FFI_Rets, size, 16);
  OFF(XLA_FFI_Rets, types, 24);
  OFF(XLA_FFI_Rets, rets, 32);
  SIZE(XLA_FFI_Attrs, 48);
  OFF(XLA_FFI_Attrs, size, 16);
  OFF(XLA_FFI_Attrs, types, 24);
  OFF(XLA_FFI_Attrs, names, 32);
  OFF(XLA_FFI_Attrs, attrs, 40);

  SIZE(XLA_FFI_CallFrame, 168);
  SIZEOF(XLA_FFI_CallFrame, 176);
  OFF(XLA_FFI_CallFrame, extension_start, 8);
  OFF(XLA_FFI_CallFrame, api, 16);
  OFF(XLA_FFI_CallFrame, ctx, 24);
  OFF(XLA_FFI_CallFrame, stage, 32);
  OFF(XLA_FFI_CallFrame, args, 40);
  OFF(XLA_FFI_CallFrame, rets, 80);
  OFF(XLA_FFI_CallFrame, attrs, 120);
  OFF(XLA_FFI_CallFrame, future, 168);

  SIZEOF(XLA_FFI_Handler_Bundle, 40);
  OFF(XLA_FFI_Handler_Bundle, instantiate, 0);
  OFF(XLA_FFI_Handler_Bundle, prepare, 8);
  OFF(XLA_FFI_Handler_Bundle, initialize, 16);
  OFF(XLA_FFI_Handler_Bundle, execute, 24);
  OFF(XLA_FFI_Handler_Bundle, record, 32);
  SIZEOF(XLA_FFI_Handler_Traits, 4);

  SIZE(XLA_FFI_Handler_Register_Args, 92);
  OFF(XLA_FFI_Handler_Register_Args, name, 16);
  OFF(XLA_FFI_Handler_Register_Args, platform, 32);
  OFF(XLA_FFI_Handler_Register_Args, bundle, 48);
  OFF(XLA_FFI_Handler_Register_Args, traits, 88);

  SIZE(XLA_FFI_Type_Register_Args, 40);
  SIZEOF(XLA_FFI_Type_Register_Args, 48);
  OFF(XLA_FFI_Type_Register_Args, name, 16);
  OFF(XLA_FFI_Type_Register_Args, type_id, 32);
  OFF(XLA_FFI_Type_Register_Args, type_info, 40);

  SIZE(XLA_FFI_InvokeContext_FindExtension_Args, 40);
  OFF(XLA_FFI_InvokeContext_FindExtension_Args, ctx, 16);
  OFF(XLA_FFI_InvokeContext_FindExtension_Args, extension_type, 24);
  OFF(XLA_FFI_InvokeContext_FindExtension_Args, extension, 32);

  SIZE(XLA_FFI_InvokeContext_Get_Args, 40);
  OFF(XLA_FFI_InvokeContext_Get_Args, ctx, 16);
  OFF(XLA_FFI_InvokeContext_Get_Args, type_id, 24);
  OFF(XLA_FFI_InvokeContext_Get_Args, data, 32);

  SIZE(XLA_FFI_State_Set_Args, 48);
  OFF(XLA_FFI_State_Set_Args, ctx, 16);
  OFF(XLA_FFI_State_Set_Args, stage, 24);
  OFF(XLA_FFI_State_Set_Args, type_id, 32);
  OFF(XLA_FFI_State_Set_Args, state, 40);
  SIZE(XLA_FFI_State_Get_Args, 48);
  OFF(XLA_FFI_State_Get_Args, stage, 24);
  OFF(XLA_FFI_State_Get_Args, type_id, 32);
  OFF(XLA_FFI_State_Get_Args, state, 40);

  SIZE(XLA_FFI_Stream_Get_Args, 32);
  OFF(XLA_FFI_Stream_Get_Args, ctx, 16);
  OFF(XLA_FFI_Stream_Get_Args, stream, 24);

  SIZE(XLA_FFI_DeviceMemory_Allocate_Args, 48);
  OFF(XLA_FFI_DeviceMemory_Allocate_Args, size, 24);
  OFF(XLA_FFI_DeviceMemory_Allocate_Args, alignment, 32);
  OFF(XLA_FFI_DeviceMemory_Allocate_Args, data, 40);
  SIZE(XLA_FFI_DeviceMemory_Free_Args, 40);
  OFF(XLA_FFI_DeviceMemory_Free_Args, size, 24);
  OFF(XLA_FFI_DeviceMemory_Free_Args, data, 32);

  SIZE(XLA_FFI_ThreadPool_Schedule_Args, 40);
  OFF(XLA_FFI_ThreadPool_Schedule_Args, task, 24);
  OFF(XLA_FFI_ThreadPool_Schedule_Args, data, 32);
  SIZE(XLA_FFI_ThreadPool_NumThreads_Args, 32);
  OFF(XLA_FFI_ThreadPool_NumThreads_Args, num_threads, 24);

  SIZE(XLA_FFI_RunId_Get_Args, 32);
  OFF(XLA_FFI_RunId_Get_Args, run_id, 24);
  SIZE(XLA_FFI_DeviceOrdinal_Get_Args, 28);
  OFF(XLA_FFI_DeviceOrdinal_Get_Args, device_ordinal, 24);

  SIZE(XLA_FFI_Metadata, 36);
  SIZEOF(XLA_FFI_Metadata, 48);
  OFF(XLA_FFI_Metadata, api_version, 8);
  OFF(XLA_FFI_Metadata, traits, 32);
  OFF(XLA_FFI_Metadata, state_type_id, 40);
  SIZE(XLA_FFI_Metadata_Extension, 32);
  OFF(XLA_FFI_Metadata_Extension, extension_base, 0);
  OFF(XLA_FFI_Metadata_Extension, metadata, 24);

  SIZE(XLA_FFI_Api, 200);
  OFF(XLA_FFI_Api, api_version, 16);
  OFF(XLA_FFI_Api, internal_api, 40);
  OFF(XLA_FFI_Api, XLA_FFI_Error_Create, 48);
  OFF(XLA_FFI_Api, XLA_FFI_Error_GetDetails, 56);
  OFF(XLA_FFI_Api, XLA_FFI_Error_Destroy, 64);
  OFF(XLA_FFI_Api, XLA_FFI_Handler_Register, 72);
  OFF(XLA_FFI_Api, XLA_FFI_Stream_Get, 80);
  OFF(XLA_FFI_Api, XLA_FFI_Type_Register, 88);
  OFF(XLA_FFI_Api, XLA_FFI_InvokeContext_Get, 96);
  OFF(XLA_FFI_Api, XLA_FFI_State_Set, 104);
  OFF(XLA_FFI_Api, XLA_FFI_State_Get, 112);
  OFF(XLA_FFI_Api, XLA_FFI_DeviceMemory_Allocate, 120);
  OFF(XLA_FFI_Api, XLA_FFI_DeviceMemory_Free, 128);
  OFF(XLA_FFI_Api, XLA_FFI_ThreadPool_Schedule, 136);
  OFF(XLA_FFI_Api, XLA_FFI_ThreadPool_NumThreads, 144);
  OFF(XLA_FFI_Api, XLA_FFI_Future_Create, 152);
  OFF(XLA_FFI_Api, XLA_FFI_Future_SetAvailable, 160);
  OFF(XLA_FFI_Api, XLA_FFI_Future_SetError, 168);
  OFF(XLA_FFI_Api, XLA_FFI_RunId_Get, 176);
  OFF(XLA_FFI_Api, XLA_FFI_DeviceOrdinal_Get, 184);
  OFF(XLA_FFI_Api, XLA_FFI_InvokeContext_FindExtension, 192);

  /* The older layouts XLA still reads. */
  VAL(CCSHIM_FFI_HANDLER_REGISTER_ARGS_SIZE_V0_1, 84);
  VAL(CCSHIM_FFI_ERROR_GETMESSAGE_ARGS_SIZE_V0_1, 32);
  VAL(CCSHIM_FFI_STATE_ARGS_SIZE_V0_2, 40);
  VAL(CCSHIM_FFI_HANDLER_BUNDLE_SIZE_V0_1, 32);
  VAL(CCSHIM_FFI_API_SIZE_V0_1, 192);
}

static void enums(void) {
  VAL(XLA_FFI_API_MAJOR, 0);
  VAL(XLA_FFI_API_MINOR, 4);
  VAL(XLA_FFI_Extension_Metadata, 1);

  VAL(XLA_FFI_Error_Code_OK, 0);
  VAL(XLA_FFI_Error_Code_CANCELLED, 1);
  VAL(XLA_FFI_Error_Code_UNKNOWN, 2);
  VAL(XLA_FFI_Error_Code_INVALID_ARGUMENT, 3);
  VAL(XLA_FFI_Error_Code_DEADLINE_EXCEEDED, 4);
  VAL(XLA_FFI_Error_Code_NOT_FOUND, 5);
  VAL(XLA_FFI_Error_Code_ALREADY_EXISTS, 6);
  VAL(XLA_FFI_Error_Code_PERMISSION_DENIED, 7);
  VAL(XLA_FFI_Error_Code_RESOURCE_EXHAUSTED, 8);
  VAL(XLA_FFI_Error_Code_FAILED_PRECONDITION, 9);
  VAL(XLA_FFI_Error_Code_ABORTED, 10);
  VAL(XLA_FFI_Error_Code_OUT_OF_RANGE, 11);
  VAL(XLA_FFI_Error_Code_UNIMPLEMENTED, 12);
  VAL(XLA_FFI_Error_Code_INTERNAL, 13);
  VAL(XLA_FFI_Error_Code_UNAVAILABLE, 14);
  VAL(XLA_FFI_Error_Code_DATA_LOSS, 15);
  VAL(XLA_FFI_Error_Code_UNAUTHENTICATED, 16);

  VAL(XLA_FFI_DataType_INVALID, 0);
  VAL(XLA_FFI_DataType_PRED, 1);
  VAL(XLA_FFI_DataType_S8, 2);
  VAL(XLA_FFI_DataType_S16, 3);
  VAL(XLA_FFI_DataType_S32, 4);
  VAL(XLA_FFI_DataType_S64, 5);
  VAL(XLA_FFI_DataType_U8, 6);
  VAL(XLA_FFI_DataType_U16, 7);
  VAL(XLA_FFI_DataType_U32, 8);
  VAL(XLA_FFI_DataType_U64, 9);
  VAL(XLA_FFI_DataType_F16, 10);
  VAL(XLA_FFI_DataType_F32, 11);
  VAL(XLA_FFI_DataType_F64, 12);
  VAL(XLA_FFI_DataType_C64, 15);
  VAL(XLA_FFI_DataType_BF16, 16);
  VAL(XLA_FFI_DataType_TOKEN, 17);
  VAL(XLA_FFI_DataType_C128, 18);
  VAL(XLA_FFI_DataType_F8E5M2, 19);
  VAL(XLA_FFI_DataType_F8E4M3FN, 20);
  VAL(XLA_FFI_DataType_S4, 21);
  VAL(XLA_FFI_DataType_U4, 22);
  VAL(XLA_FFI_DataType_F8E4M3B11FNUZ, 23);
  VAL(XLA_FFI_DataType_F8E5M2FNUZ, 24);
  VAL(XLA_FFI_DataType_F8E4M3FNUZ, 25);
  VAL(XLA_FFI_DataType_S2, 26);
  VAL(XLA_FFI_DataType_U2, 27);
  VAL(XLA_FFI_DataType_F8E4M3, 28);
  VAL(XLA_FFI_DataType_F8E3M4, 29);
  VAL(XLA_FFI_DataType_S1, 30);
  VAL(XLA_FFI_DataType_U1, 31);
  VAL(XLA_FFI_DataType_F4E2M1FN, 32);
  VAL(XLA_FFI_DataType_F8E8M0FNU, 33);

  VAL(XLA_FFI_ArgType_BUFFER, 1);
  VAL(XLA_FFI_RetType_BUFFER, 1);
  VAL(XLA_FFI_AttrType_ARRAY, 1);
  VAL(XLA_FFI_AttrType_DICTIONARY, 2);
  VAL(XLA_FFI_AttrType_SCALAR, 3);
  VAL(XLA_FFI_AttrType_STRING, 4);

  VAL(XLA_FFI_ExecutionStage_INSTANTIATE, 0);
  VAL(XLA_FFI_ExecutionStage_PREPARE, 1);
  VAL(XLA_FFI_ExecutionStage_INITIALIZE, 2);
  VAL(XLA_FFI_ExecutionStage_EXECUTE, 3);
  VAL(XLA_FFI_ExecutionStage_RECORD, 4);

  VAL(XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE, 1);
  VAL(sizeof(XLA_FFI_DataType), 4);
  VAL(sizeof(XLA_FFI_ExecutionStage), 4);
  VAL(XLA_FFI_UNKNOWN_TYPE_ID.type_id, 0);
}

int main(void) {
  if (sizeof(void*) != 8) {
    printf("skipped: the pinned numbers are for LP64\n");
    return CHECK_SKIP_CODE;
  }
  structs();
  enums();
  printf("abi layout: %d sizes, offsets and values pinned\n", checked);
  return 0;
}
