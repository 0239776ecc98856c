/*
 * The call-frame builder: collects buffers and a tree of attributes, checks
 * them against what XLA would send, and lays them out as an
 * XLA_FFI_CallFrame with every dictionary sorted byte-wise by name.
 */
#include <stdlib.h>
#include <string.h>

#include "ccshim/signature.h" /* CCSHIM_MAX_RANK */
#include "core_internal.h"

typedef struct dict dict;

typedef struct attr {
  char* name;
  XLA_FFI_ByteSpan name_span;
  XLA_FFI_AttrType type;
  union {
    XLA_FFI_ByteSpan string;
    XLA_FFI_Scalar scalar;
    XLA_FFI_Array array;
  } v;
  union {
    int64_t i;
    double d;
    unsigned char bytes[8];
  } scalar_value;
  void* owned; /* string bytes or array elements */
  dict* dict;  /* DICTIONARY only */
} attr;

struct dict {
  attr** items;
  size_t n, cap;
  dict* parent;
  /* Filled by build: */
  XLA_FFI_Attrs built;
  XLA_FFI_AttrType* types;
  XLA_FFI_ByteSpan** names;
  void** ptrs;
};

typedef struct buffers {
  XLA_FFI_Buffer* items;
  size_t n, cap;
  void** ptrs;                /* filled by build */
  XLA_FFI_ArgType* arg_types; /* filled by build for arguments */
  XLA_FFI_RetType* ret_types; /* filled by build for results */
  size_t built_cap;
} buffers;

struct ccshim_frame_builder {
  buffers args, rets;
  dict root;
  dict* open;
  int depth;
};

/* ---------------------------------------------------------------------------
 * Teardown
 * ------------------------------------------------------------------------ */

static void dict_clear(dict* d);

static void attr_free(attr* a) {
  if (a == NULL) return;
  free(a->name);
  free(a->owned);
  if (a->dict) {
    dict_clear(a->dict);
    free(a->dict->items);
    free(a->dict);
  }
  free(a);
}

static void dict_free_built(dict* d) {
  free(d->types);
  free(d->names);
  free(d->ptrs);
  d->types = NULL;
  d->names = NULL;
  d->ptrs = NULL;
}

static void dict_clear(dict* d) {
  for (size_t i = 0; i < d->n; i++) attr_free(d->items[i]);
  d->n = 0;
  dict_free_built(d);
}

static void buffers_clear(buffers* b) {
  for (size_t i = 0; i < b->n; i++) free(b->items[i].dims);
  b->n = 0;
}

ccshim_status ccshim_frame_builder_new(ccshim_frame_builder** out) {
  if (out == NULL) return ccshim__fail(CCSHIM_EINVAL, "frame builder: out is NULL");
  *out = calloc(1, sizeof **out);
  if (*out == NULL) return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
  (*out)->open = &(*out)->root;
  return CCSHIM_OK;
}

void ccshim_frame_builder_reset(ccshim_frame_builder* fb) {
  if (fb == NULL) return;
  buffers_clear(&fb->args);
  buffers_clear(&fb->rets);
  dict_clear(&fb->root);
  fb->open = &fb->root;
  fb->depth = 0;
}

void ccshim_frame_builder_free(ccshim_frame_builder* fb) {
  if (fb == NULL) return;
  ccshim_frame_builder_reset(fb);
  free(fb->args.items);
  free(fb->args.ptrs);
  free(fb->args.arg_types);
  free(fb->rets.items);
  free(fb->rets.ptrs);
  free(fb->rets.ret_types);
  free(fb->root.items);
  free(fb);
}

/* ---------------------------------------------------------------------------
 * Buffers
 * ------------------------------------------------------------------------ */

static ccshim_status add_buffer(buffers* b, const char* what, XLA_FFI_DataType dtype, void* data,
                                int64_t rank, const int64_t* dims) {
  size_t index = b->n;
  if (ccshim_dtype_name((int)dtype) == NULL)
    return ccshim__fail(CCSHIM_EINVAL, "%s %zu: dtype %d is not an XLA FFI data type", what, index,
                        (int)dtype);
  if (rank < 0 || rank > CCSHIM_MAX_RANK)
    return ccshim__fail(CCSHIM_EOVERFLOW, "%s %zu: rank %lld is out of range; expected 0..%d", what,
                        index, (long long)rank, CCSHIM_MAX_RANK);
  if (rank > 0 && dims == NULL)
    return ccshim__fail(CCSHIM_EINVAL, "%s %zu: rank %lld but dims is NULL", what, index,
                        (long long)rank);
  if (dtype == XLA_FFI_DataType_TOKEN && (rank != 0 || data != NULL))
    return ccshim__fail(CCSHIM_EINVAL,
                        "%s %zu: a token has rank 0 and NULL data, got rank "
                        "%lld and data %p",
                        what, index, (long long)rank, data);
  uint64_t elements = 1;
  for (int64_t i = 0; i < rank; i++) {
    if (dims[i] < 0)
      return ccshim__fail(CCSHIM_EINVAL,
                          "%s %zu: dimension %lld is %lld; "
                          "expected a size >= 0",
                          what, index, (long long)i, (long long)dims[i]);
    if (dims[i] != 0 && elements > (uint64_t)INT64_MAX / (uint64_t)dims[i])
      return ccshim__fail(CCSHIM_EOVERFLOW, "%s %zu: the element count overflows int64", what,
                          index);
    elements *= (uint64_t)dims[i];
  }
  int overflow;
  ccshim_dtype_bytes((int)dtype, elements, &overflow);
  if (overflow)
    return ccshim__fail(CCSHIM_EOVERFLOW, "%s %zu: the byte size overflows", what, index);
  if (b->n == CCSHIM_FRAME_MAX_BUFFERS)
    return ccshim__fail(CCSHIM_EOVERFLOW, "%s: more than %d buffers", what,
                        CCSHIM_FRAME_MAX_BUFFERS);
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 8;
    XLA_FFI_Buffer* grown = realloc(b->items, cap * sizeof *grown);
    if (grown == NULL) return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
    b->items = grown;
    b->cap = cap;
  }
  int64_t* copy = NULL;
  if (rank > 0) {
    copy = malloc((size_t)rank * sizeof *copy);
    if (copy == NULL) return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
    memcpy(copy, dims, (size_t)rank * sizeof *copy);
  }
  XLA_FFI_Buffer* buf = &b->items[b->n++];
  memset(buf, 0, sizeof *buf);
  buf->struct_size = XLA_FFI_Buffer_STRUCT_SIZE;
  buf->dtype = dtype;
  buf->data = data;
  buf->rank = rank;
  buf->dims = copy;
  return CCSHIM_OK;
}

ccshim_status ccshim_frame_builder_add_arg(ccshim_frame_builder* fb, XLA_FFI_DataType dtype,
                                           void* data, int64_t rank, const int64_t* dims) {
  if (fb == NULL) return ccshim__fail(CCSHIM_EINVAL, "frame builder is NULL");
  return add_buffer(&fb->args, "arg", dtype, data, rank, dims);
}

ccshim_status ccshim_frame_builder_add_ret(ccshim_frame_builder* fb, XLA_FFI_DataType dtype,
                                           void* data, int64_t rank, const int64_t* dims) {
  if (fb == NULL) return ccshim__fail(CCSHIM_EINVAL, "frame builder is NULL");
  return add_buffer(&fb->rets, "ret", dtype, data, rank, dims);
}

/* ---------------------------------------------------------------------------
 * Attributes
 * ------------------------------------------------------------------------ */

static int scalar_dtype_ok(XLA_FFI_DataType t) {
  return t == XLA_FFI_DataType_PRED || (t >= XLA_FFI_DataType_S8 && t <= XLA_FFI_DataType_U64) ||
         t == XLA_FFI_DataType_F32 || t == XLA_FFI_DataType_F64;
}

static int array_dtype_ok(XLA_FFI_DataType t) {
  return (t >= XLA_FFI_DataType_S8 && t <= XLA_FFI_DataType_U64) || t == XLA_FFI_DataType_F32 ||
         t == XLA_FFI_DataType_F64;
}

/* Checks the name, then appends a new attribute of `type` to the open
 * dictionary; the caller fills the value. */
static ccshim_status new_attr(ccshim_frame_builder* fb, const char* name, XLA_FFI_AttrType type,
                              attr** out) {
  *out = NULL;
  if (fb == NULL) return ccshim__fail(CCSHIM_EINVAL, "frame builder is NULL");
  if (name == NULL)
    return ccshim__fail(CCSHIM_EINVAL,
                        "attribute name is NULL; every "
                        "attribute XLA delivers has a name");
  dict* d = fb->open;
  size_t len = strlen(name);
  for (size_t i = 0; i < d->n; i++)
    if (d->items[i]->name_span.len == len && memcmp(d->items[i]->name, name, len) == 0)
      return ccshim__fail(CCSHIM_EEXIST,
                          "attribute '%s' is already set in this dictionary; "
                          "names are unique, as in an MLIR dictionary",
                          name);
  if (d->n == CCSHIM_FRAME_MAX_ATTRS)
    return ccshim__fail(CCSHIM_EOVERFLOW,
                        "more than %d attributes in one "
                        "dictionary",
                        CCSHIM_FRAME_MAX_ATTRS);
  if (d->n == d->cap) {
    size_t cap = d->cap ? 2 * d->cap : 8;
    attr** grown = realloc(d->items, cap * sizeof *grown);
    if (grown == NULL) return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
    d->items = grown;
    d->cap = cap;
  }
  attr* a = calloc(1, sizeof *a);
  if (a == NULL || (a->name = ccshim__strndup(name, len)) == NULL) {
    free(a);
    return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
  }
  a->name_span.ptr = a->name;
  a->name_span.len = len;
  a->type = type;
  d->items[d->n++] = a;
  *out = a;
  return CCSHIM_OK;
}

/* Removes the attribute new_attr just appended, after a later failure. */
static void drop_last(ccshim_frame_builder* fb) {
  dict* d = fb->open;
  attr_free(d->items[--d->n]);
}

ccshim_status ccshim_frame_builder_add_string(ccshim_frame_builder* fb, const char* name,
                                              const char* bytes, size_t len) {
  if (bytes == NULL && len > 0)
    return ccshim__fail(CCSHIM_EINVAL,
                        "string attribute '%s': bytes is NULL "
                        "with length %zu",
                        name ? name : "(null)", len);
  if (len > CCSHIM_FRAME_MAX_ATTR_BYTES)
    return ccshim__fail(CCSHIM_EOVERFLOW,
                        "string attribute '%s': %zu bytes; "
                        "expected at most %u",
                        name ? name : "(null)", len, CCSHIM_FRAME_MAX_ATTR_BYTES);
  attr* a;
  ccshim_status st = new_attr(fb, name, XLA_FFI_AttrType_STRING, &a);
  if (st != CCSHIM_OK) return st;
  /* A NUL after the bytes costs nothing and matches XLA, whose strings point
   * into std::string storage; the span still carries the true length. */
  a->owned = ccshim__strndup(bytes ? bytes : "", len);
  if (a->owned == NULL) {
    drop_last(fb);
    return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
  }
  a->v.string.ptr = a->owned;
  a->v.string.len = len;
  return CCSHIM_OK;
}

ccshim_status ccshim_frame_builder_add_scalar(ccshim_frame_builder* fb, const char* name,
                                              XLA_FFI_DataType dtype, const void* value) {
  if (!scalar_dtype_ok(dtype))
    return ccshim__fail(CCSHIM_EINVAL,
                        "scalar attribute '%s': dtype %s is not one XLA "
                        "delivers; expected pred, s8..s64, u8..u64, f32 or f64",
                        name ? name : "(null)",
                        ccshim_dtype_name((int)dtype) ? ccshim_dtype_name((int)dtype) : "invalid");
  if (value == NULL)
    return ccshim__fail(CCSHIM_EINVAL, "scalar attribute '%s': value is NULL",
                        name ? name : "(null)");
  attr* a;
  ccshim_status st = new_attr(fb, name, XLA_FFI_AttrType_SCALAR, &a);
  if (st != CCSHIM_OK) return st;
  memcpy(a->scalar_value.bytes, value, (size_t)ccshim_dtype_bits((int)dtype) / 8);
  a->v.scalar.dtype = dtype;
  a->v.scalar.value = a->scalar_value.bytes;
  return CCSHIM_OK;
}

ccshim_status ccshim_frame_builder_add_array(ccshim_frame_builder* fb, const char* name,
                                             XLA_FFI_DataType dtype, const void* data,
                                             size_t count) {
  if (!array_dtype_ok(dtype))
    return ccshim__fail(CCSHIM_EINVAL,
                        "array attribute '%s': element type %s is not one XLA "
                        "delivers; expected s8..s64, u8..u64, f32 or f64",
                        name ? name : "(null)",
                        ccshim_dtype_name((int)dtype) ? ccshim_dtype_name((int)dtype) : "invalid");
  if (data == NULL && count > 0)
    return ccshim__fail(CCSHIM_EINVAL,
                        "array attribute '%s': data is NULL "
                        "with %zu elements",
                        name ? name : "(null)", count);
  int overflow;
  size_t bytes = ccshim_dtype_bytes((int)dtype, count, &overflow);
  if (overflow || bytes > CCSHIM_FRAME_MAX_ATTR_BYTES)
    return ccshim__fail(CCSHIM_EOVERFLOW,
                        "array attribute '%s': %zu elements "
                        "are more than %u bytes",
                        name ? name : "(null)", count, CCSHIM_FRAME_MAX_ATTR_BYTES);
  attr* a;
  ccshim_status st = new_attr(fb, name, XLA_FFI_AttrType_ARRAY, &a);
  if (st != CCSHIM_OK) return st;
  a->owned = malloc(bytes ? bytes : 1);
  if (a->owned == NULL) {
    drop_last(fb);
    return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
  }
  if (bytes) memcpy(a->owned, data, bytes);
  a->v.array.dtype = dtype;
  a->v.array.size = count;
  a->v.array.data = a->owned;
  return CCSHIM_OK;
}

ccshim_status ccshim_frame_builder_begin_dict(ccshim_frame_builder* fb, const char* name) {
  if (fb != NULL && fb->depth >= CCSHIM_FRAME_MAX_DICT_DEPTH)
    return ccshim__fail(CCSHIM_EOVERFLOW, "dictionaries nest deeper than %d",
                        CCSHIM_FRAME_MAX_DICT_DEPTH);
  attr* a;
  ccshim_status st = new_attr(fb, name, XLA_FFI_AttrType_DICTIONARY, &a);
  if (st != CCSHIM_OK) return st;
  a->dict = calloc(1, sizeof *a->dict);
  if (a->dict == NULL) {
    drop_last(fb);
    return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
  }
  a->dict->parent = fb->open;
  fb->open = a->dict;
  fb->depth++;
  return CCSHIM_OK;
}

ccshim_status ccshim_frame_builder_end_dict(ccshim_frame_builder* fb) {
  if (fb == NULL) return ccshim__fail(CCSHIM_EINVAL, "frame builder is NULL");
  if (fb->open == &fb->root)
    return ccshim__fail(CCSHIM_EINVAL, "end_dict without an open dictionary");
  fb->open = fb->open->parent;
  fb->depth--;
  return CCSHIM_OK;
}

/* ---------------------------------------------------------------------------
 * Build
 * ------------------------------------------------------------------------ */

/* Byte-wise, shorter first on a common prefix: std::string's operator<,
 * which is how XLA orders attribute names. */
static int by_name(const void* pa, const void* pb) {
  const attr* a = *(const attr* const*)pa;
  const attr* b = *(const attr* const*)pb;
  size_t n = a->name_span.len < b->name_span.len ? a->name_span.len : b->name_span.len;
  int c = memcmp(a->name, b->name, n);
  if (c != 0) return c;
  return (a->name_span.len > b->name_span.len) - (a->name_span.len < b->name_span.len);
}

static ccshim_status build_dict(dict* d) {
  dict_free_built(d);
  memset(&d->built, 0, sizeof d->built);
  d->built.struct_size = XLA_FFI_Attrs_STRUCT_SIZE;
  if (d->n == 0) return CCSHIM_OK;
  qsort(d->items, d->n, sizeof *d->items, by_name);
  d->types = malloc(d->n * sizeof *d->types);
  d->names = malloc(d->n * sizeof *d->names);
  d->ptrs = malloc(d->n * sizeof *d->ptrs);
  if (!d->types || !d->names || !d->ptrs) {
    dict_free_built(d);
    return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < d->n; i++) {
    attr* a = d->items[i];
    d->types[i] = a->type;
    d->names[i] = &a->name_span;
    switch (a->type) {
      case XLA_FFI_AttrType_STRING: d->ptrs[i] = &a->v.string; break;
      case XLA_FFI_AttrType_SCALAR: d->ptrs[i] = &a->v.scalar; break;
      case XLA_FFI_AttrType_ARRAY: d->ptrs[i] = &a->v.array; break;
      case XLA_FFI_AttrType_DICTIONARY: {
        ccshim_status st = build_dict(a->dict);
        if (st != CCSHIM_OK) return st;
        d->ptrs[i] = &a->dict->built;
        break;
      }
    }
  }
  d->built.size = (int64_t)d->n;
  d->built.types = d->types;
  d->built.names = d->names;
  d->built.attrs = d->ptrs;
  return CCSHIM_OK;
}

static ccshim_status build_buffers(buffers* b, int is_ret) {
  if (b->n > b->built_cap) {
    void** ptrs = realloc(b->ptrs, b->n * sizeof *ptrs);
    if (ptrs == NULL) return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
    b->ptrs = ptrs;
    if (is_ret) {
      XLA_FFI_RetType* t = realloc(b->ret_types, b->n * sizeof *t);
      if (t == NULL) return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
      b->ret_types = t;
    } else {
      XLA_FFI_ArgType* t = realloc(b->arg_types, b->n * sizeof *t);
      if (t == NULL) return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
      b->arg_types = t;
    }
    b->built_cap = b->n;
  }
  for (size_t i = 0; i < b->n; i++) {
    b->ptrs[i] = &b->items[i];
    if (is_ret)
      b->ret_types[i] = XLA_FFI_RetType_BUFFER;
    else
      b->arg_types[i] = XLA_FFI_ArgType_BUFFER;
  }
  return CCSHIM_OK;
}

ccshim_status ccshim_frame_builder_build(ccshim_frame_builder* fb, const XLA_FFI_Api* api,
                                         ccshim_context* ctx, XLA_FFI_ExecutionStage stage,
                                         XLA_FFI_CallFrame* out) {
  if (fb == NULL || out == NULL)
    return ccshim__fail(CCSHIM_EINVAL, "frame build: %s is NULL", fb == NULL ? "builder" : "out");
  if (fb->open != &fb->root)
    return ccshim__fail(CCSHIM_EINVAL,
                        "frame build: a dictionary is still "
                        "open; call end_dict first");
  if ((int)stage < XLA_FFI_ExecutionStage_INSTANTIATE || (int)stage > XLA_FFI_ExecutionStage_RECORD)
    return ccshim__fail(CCSHIM_EINVAL,
                        "frame build: stage %d is not one of "
                        "instantiate(0) .. record(4)",
                        (int)stage);
  ccshim_status st;
  if ((st = build_buffers(&fb->args, 0)) != CCSHIM_OK) return st;
  if ((st = build_buffers(&fb->rets, 1)) != CCSHIM_OK) return st;
  if ((st = build_dict(&fb->root)) != CCSHIM_OK) return st;

  memset(out, 0, sizeof *out);
  out->struct_size = XLA_FFI_CallFrame_STRUCT_SIZE;
  out->api = api;
  out->ctx = ctx;
  out->stage = stage;
  out->args.struct_size = XLA_FFI_Args_STRUCT_SIZE;
  out->args.size = (int64_t)fb->args.n;
  out->args.types = fb->args.arg_types;
  out->args.args = fb->args.ptrs;
  out->rets.struct_size = XLA_FFI_Rets_STRUCT_SIZE;
  out->rets.size = (int64_t)fb->rets.n;
  out->rets.types = fb->rets.ret_types;
  out->rets.rets = fb->rets.ptrs;
  out->attrs = fb->root.built;
  out->future = NULL;
  return CCSHIM_OK;
}
