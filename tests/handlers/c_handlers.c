/*
 * Plain-C typed-FFI handlers: the metadata answer, stage and count checks,
 * attribute decoding and errors done by hand, through call_frame->api only.
 */
#include "c_handlers.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static XLA_FFI_Error* error(const XLA_FFI_Api* api, XLA_FFI_Error_Code code, const char* message) {
  XLA_FFI_Error_Create_Args args;
  memset(&args, 0, sizeof args);
  args.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
  args.message = message;
  args.errc = code;
  return api->XLA_FFI_Error_Create(&args);
}

/* Answers the metadata query; returns 1 when the frame was one. */
static int metadata(XLA_FFI_CallFrame* frame) {
  XLA_FFI_InternalExtension* ext = frame->extension_start;
  if (ext == NULL || ext->type != XLA_FFI_Extension_Metadata) return 0;
  XLA_FFI_Metadata* md = ((XLA_FFI_Metadata_Extension*)ext)->metadata;
  md->api_version.struct_size = XLA_FFI_Api_Version_STRUCT_SIZE;
  md->api_version.extension_start = NULL;
  md->api_version.major_version = 0;
  md->api_version.minor_version = 1;
  md->traits = 0;
  return 1;
}

static const void* find_attr(const XLA_FFI_Attrs* attrs, const char* name, XLA_FFI_AttrType type) {
  size_t len = strlen(name);
  for (int64_t i = 0; i < attrs->size; i++) {
    const XLA_FFI_ByteSpan* n = attrs->names[i];
    if (n->len == len && memcmp(n->ptr, name, len) == 0 && attrs->types[i] == type)
      return attrs->attrs[i];
  }
  return NULL;
}

XLA_FFI_Error* c_scale(XLA_FFI_CallFrame* frame) {
  if (metadata(frame)) return NULL;
  const XLA_FFI_Api* api = frame->api;
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return NULL;
  if (frame->args.size != 1 || frame->rets.size != 1)
    return error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                 "c_scale: expected 1 argument and 1 result");
  const XLA_FFI_Scalar* factor = find_attr(&frame->attrs, "factor", XLA_FFI_AttrType_SCALAR);
  if (factor == NULL || factor->dtype != XLA_FFI_DataType_F32)
    return error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                 "c_scale: expected an f32 scalar attribute 'factor'");
  const XLA_FFI_Buffer* x = frame->args.args[0];
  XLA_FFI_Buffer* y = frame->rets.rets[0];
  if (x->dtype != XLA_FFI_DataType_F32 || y->dtype != XLA_FFI_DataType_F32 || x->rank != y->rank)
    return error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                 "c_scale: expected f32 buffers of one shape");
  int64_t n = 1;
  for (int64_t d = 0; d < x->rank; d++) {
    if (x->dims[d] != y->dims[d])
      return error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "c_scale: shapes differ");
    n *= x->dims[d];
  }
  float f = *(const float*)factor->value;
  const float* in = x->data;
  float* out = y->data;
  for (int64_t i = 0; i < n; i++) out[i] = in[i] * f;
  return NULL;
}

/* ---------------------------------------------------------------------------
 * c_attrs_echo
 * ------------------------------------------------------------------------ */

typedef struct writer {
  unsigned char* at;
  size_t left;
  int overflow;
} writer;

static void put(writer* w, const void* p, size_t n) {
  if (n > w->left) {
    w->overflow = 1;
    return;
  }
  memcpy(w->at, p, n);
  w->at += n;
  w->left -= n;
}

static void put_u64(writer* w, uint64_t v) { put(w, &v, sizeof v); }

static size_t element_size(XLA_FFI_DataType t) {
  switch (t) {
    case XLA_FFI_DataType_PRED:
    case XLA_FFI_DataType_S8:
    case XLA_FFI_DataType_U8: return 1;
    case XLA_FFI_DataType_S16:
    case XLA_FFI_DataType_U16: return 2;
    case XLA_FFI_DataType_S32:
    case XLA_FFI_DataType_U32:
    case XLA_FFI_DataType_F32: return 4;
    case XLA_FFI_DataType_S64:
    case XLA_FFI_DataType_U64:
    case XLA_FFI_DataType_F64: return 8;
    default: return 0;
  }
}

static void echo(writer* w, const XLA_FFI_Attrs* attrs) {
  put_u64(w, (uint64_t)attrs->size);
  for (int64_t i = 0; i < attrs->size; i++) {
    const XLA_FFI_ByteSpan* n = attrs->names[i];
    put_u64(w, n->len);
    put(w, n->ptr, n->len);
    put_u64(w, (uint64_t)attrs->types[i]);
    switch (attrs->types[i]) {
      case XLA_FFI_AttrType_STRING: {
        const XLA_FFI_ByteSpan* s = attrs->attrs[i];
        put_u64(w, s->len);
        put(w, s->ptr, s->len);
        break;
      }
      case XLA_FFI_AttrType_SCALAR: {
        const XLA_FFI_Scalar* s = attrs->attrs[i];
        put_u64(w, (uint64_t)s->dtype);
        put(w, s->value, element_size(s->dtype));
        break;
      }
      case XLA_FFI_AttrType_ARRAY: {
        const XLA_FFI_Array* a = attrs->attrs[i];
        put_u64(w, (uint64_t)a->dtype);
        put_u64(w, a->size);
        put(w, a->data, a->size * element_size(a->dtype));
        break;
      }
      case XLA_FFI_AttrType_DICTIONARY: echo(w, attrs->attrs[i]); break;
    }
  }
}

XLA_FFI_Error* c_attrs_echo(XLA_FFI_CallFrame* frame) {
  if (metadata(frame)) return NULL;
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return NULL;
  const XLA_FFI_Api* api = frame->api;
  if (frame->rets.size != 1)
    return error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "c_attrs_echo: expected one u8 result");
  XLA_FFI_Buffer* out = frame->rets.rets[0];
  if (out->dtype != XLA_FFI_DataType_U8 || out->rank != 1)
    return error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "c_attrs_echo: expected a u8[N] result");
  memset(out->data, 0, (size_t)out->dims[0]);
  writer w = {out->data, (size_t)out->dims[0], 0};
  echo(&w, &frame->attrs);
  if (w.overflow)
    return error(api, XLA_FFI_Error_Code_RESOURCE_EXHAUSTED,
                 "c_attrs_echo: the result buffer is too small");
  return NULL;
}

XLA_FFI_Error* c_fail(XLA_FFI_CallFrame* frame) {
  if (metadata(frame)) return NULL;
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return NULL;
  const XLA_FFI_Api* api = frame->api;
  const XLA_FFI_Scalar* code = find_attr(&frame->attrs, "code", XLA_FFI_AttrType_SCALAR);
  const XLA_FFI_ByteSpan* msg = find_attr(&frame->attrs, "message", XLA_FFI_AttrType_STRING);
  if (code == NULL || code->dtype != XLA_FFI_DataType_S64 || msg == NULL)
    return error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                 "c_fail: expected 'code' (s64) and 'message' (string)");
  char text[256];
  snprintf(text, sizeof text, "%.*s", (int)msg->len, msg->ptr);
  return error(api, (XLA_FFI_Error_Code) * (const int64_t*)code->value, text);
}

/* ---------------------------------------------------------------------------
 * The stateful pair
 * ------------------------------------------------------------------------ */

/* One id for the type, process-wide; registered with each runtime (API
 * table) that runs the handler: the first assigns the id, later ones are
 * given it explicitly. */
static XLA_FFI_TypeId counter_type = {0};
static const XLA_FFI_Api* counter_registered_with[8];

static void counter_delete(void* p) { free(p); }

static XLA_FFI_Error* ensure_counter_type(const XLA_FFI_Api* api) {
  size_t i = 0;
  while (i < 8 && counter_registered_with[i] != NULL) {
    if (counter_registered_with[i] == api) return NULL;
    i++;
  }
  static const char name[] = "ccshim.test.Counter";
  XLA_FFI_TypeInfo info = {XLA_FFI_TypeInfo_STRUCT_SIZE, NULL, counter_delete};
  XLA_FFI_Type_Register_Args args;
  memset(&args, 0, sizeof args);
  args.struct_size = XLA_FFI_Type_Register_Args_STRUCT_SIZE;
  args.name.ptr = name;
  args.name.len = sizeof name - 1;
  args.type_id = &counter_type;
  args.type_info = &info;
  XLA_FFI_Error* err = api->XLA_FFI_Type_Register(&args);
  if (err == NULL && i < 8) counter_registered_with[i] = api;
  return err;
}

XLA_FFI_Error* c_counter_instantiate(XLA_FFI_CallFrame* frame) {
  if (metadata(frame)) return NULL;
  if (frame->stage != XLA_FFI_ExecutionStage_INSTANTIATE)
    return error(frame->api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                 "c_counter_instantiate: wrong stage");
  const XLA_FFI_Api* api = frame->api;
  XLA_FFI_Error* err = ensure_counter_type(api);
  if (err) return err;
  int64_t* count = calloc(1, sizeof *count);
  XLA_FFI_State_Set_Args set;
  memset(&set, 0, sizeof set);
  set.struct_size = XLA_FFI_State_Set_Args_STRUCT_SIZE;
  set.ctx = frame->ctx;
  set.stage = XLA_FFI_ExecutionStage_INSTANTIATE;
  set.type_id = &counter_type;
  set.state = count;
  return api->XLA_FFI_State_Set(&set);
}

XLA_FFI_Error* c_counter_execute(XLA_FFI_CallFrame* frame) {
  if (metadata(frame)) return NULL;
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return NULL;
  const XLA_FFI_Api* api = frame->api;
  XLA_FFI_State_Get_Args get;
  memset(&get, 0, sizeof get);
  get.struct_size = XLA_FFI_State_Get_Args_STRUCT_SIZE;
  get.ctx = frame->ctx;
  get.stage = XLA_FFI_ExecutionStage_INSTANTIATE;
  get.type_id = &counter_type;
  XLA_FFI_Error* err = api->XLA_FFI_State_Get(&get);
  if (err) return err;
  int64_t* count = get.state;
  ++*count;
  if (frame->rets.size != 1)
    return error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                 "c_counter_execute: expected one s32 result");
  XLA_FFI_Buffer* out = frame->rets.rets[0];
  *(int32_t*)out->data = (int32_t)*count;
  return NULL;
}
