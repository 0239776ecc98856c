/*
 * One call of a wrapped kernel: read the typed call frame, rebuild the legacy
 * argument block on the stack, call the kernel, and turn its status into an
 * XLA_FFI_Error.  No lock, and no allocation except on paths that are either
 * errors or larger than the stack block (a per-thread buffer, kept).
 *
 * Order of business, as XLA drives a handler:
 *   1. the frame's struct_size;
 *   2. the metadata query: answer version and traits, touch nothing else
 *      (on JAX <= 0.8 api is NULL here);
 *   3. stages other than execute: nothing to do;
 *   4. counts, buffer pointers, and (with a signature) dtypes and dims;
 *   5. the opaque attribute, the stream, the kernel, the status.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter_internal.h"
#include "layout.h"
#include "status_impl.h"

enum { LOCAL_PTRS = 128, LOCAL_BYTES = 256, MESSAGE_CAP = 1024 };

/* ---------------------------------------------------------------------------
 * Per-thread scratch for frames larger than the stack block.
 * ------------------------------------------------------------------------ */

typedef struct scratch {
  void** ptrs;
  size_t ptr_cap;
  char* bytes;
  size_t byte_cap;
} scratch;

static _Thread_local scratch tls_scratch;
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void* p) {
  scratch* s = p;
  free(s->ptrs);
  free(s->bytes);
  memset(s, 0, sizeof *s);
}

static void scratch_init(void) { pthread_key_create(&scratch_key, scratch_free); }

/* Grows the thread's buffer to hold `size` bytes (kept for later calls). */
static void* scratch_grow(void** buf, size_t* cap, size_t size) {
  if (*cap >= size) return *buf;
  pthread_once(&scratch_once, scratch_init);
  size_t want = size < 4096 ? 4096 : size;
  void* p = realloc(*buf, want);
  if (p == NULL) return NULL;
  *buf = p;
  *cap = want;
  pthread_setspecific(scratch_key, &tls_scratch); /* frees it at thread exit */
  return p;
}

/* ---------------------------------------------------------------------------
 * Errors, made through call_frame->api (Error_Create is table entry 0, stable
 * in every release).
 * ------------------------------------------------------------------------ */

static XLA_FFI_Error* make_error(const XLA_FFI_Api* api, XLA_FFI_Error_Code code,
                                 const char* message) {
  XLA_FFI_Error_Create_Args args;
  memset(&args, 0, sizeof args);
  args.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
  args.message = message;
  args.errc = code;
  return api->XLA_FFI_Error_Create(&args);
}

static XLA_FFI_Error* invalid(const XLA_FFI_Api* api, const char* fmt, ...) CCSHIM__PRINTF(2, 3);
static XLA_FFI_Error* invalid(const XLA_FFI_Api* api, const char* fmt, ...) {
  char msg[MESSAGE_CAP];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n >= (int)sizeof msg) memcpy(msg + sizeof msg - 4, "...", 4); /* said, not hidden */
  return make_error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT, msg);
}

/* "arg 1" / "ret 0", numbering each side from zero. */
static void side_name(const ccshim_adapter* a, int64_t i, int64_t num_args, char* buf, size_t cap) {
  (void)a;
  if (i < num_args)
    ccshim__format(buf, cap, "arg %lld", (long long)i);
  else
    ccshim__format(buf, cap, "ret %lld", (long long)(i - num_args));
}

static XLA_FFI_Error* count_error(const ccshim_adapter* a, const XLA_FFI_Api* api, int64_t na,
                                  int64_t nr) {
  if (a->count_checked)
    return invalid(api,
                   "wrong number of buffers: expected %d argument(s) and %d "
                   "result(s) for %s, got %lld and %lld",
                   a->num_args, a->num_rets, a->signature, (long long)na, (long long)nr);
  return invalid(api,
                 "wrong number of buffers: got %lld argument(s) and %lld "
                 "result(s); expected 0..%d of each",
                 (long long)na, (long long)nr, CCSHIM_FRAME_MAX_BUFFERS);
}

/* A token, or a buffer with no elements, needs no address.  Only a rank
 * ccshim can trust is read: buffer_error words the others. */
static int may_be_null(const XLA_FFI_Buffer* b) {
  if (b->dtype == XLA_FFI_DataType_TOKEN) return 1;
  if (b->rank < 0 || b->rank > CCSHIM_MAX_RANK) return 0;
  for (int64_t d = 0; b->dims != NULL && d < b->rank; d++)
    if (b->dims[d] == 0) return 1; /* no elements, no address needed */
  return 0;
}

/* Explains why buffer i (of args then rets) was refused. */
static XLA_FFI_Error* buffer_error(const ccshim_adapter* a, const XLA_FFI_Api* api,
                                   const XLA_FFI_Buffer* b, int64_t i, int64_t na) {
  char who[32], got[1400];
  side_name(a, i, na, who, sizeof who);
  if (b == NULL) return invalid(api, "%s: the buffer pointer is NULL", who);
  if (b->rank < 0 || b->rank > CCSHIM_MAX_RANK)
    return invalid(api, "%s: rank %lld is out of range; expected 0..%d", who, (long long)b->rank,
                   CCSHIM_MAX_RANK);
  if (b->rank > 0 && b->dims == NULL)
    return invalid(api, "%s: rank %lld but dims is NULL", who, (long long)b->rank);
  ccshim__format_shape(got, sizeof got, (int)b->dtype, b->rank, b->dims);
  return invalid(api, "%s: data is NULL for %s; expected a buffer address", who, got);
}

/* "f32[n,4]"-style text of what a polymorphic spec says. */
static void format_spec(const ccshim_adapter* a, const leaf_spec* s, char* buf, size_t cap) {
  const char* dtype = ccshim_dtype_name(s->dtype);
  size_t n = ccshim__format(buf, cap, "%s[", dtype ? dtype : "?");
  if (s->lead)
    n += ccshim__format(buf + n, cap - n, "...%s",
                        s->count_var >= 0 ? a->dim_names[s->count_var] : "");
  for (int32_t d = 0; d < s->rank; d++) {
    const char* sep = d || s->lead ? "," : "";
    if (s->dims[d] >= 0)
      n += ccshim__format(buf + n, cap - n, "%s%lld", sep, (long long)s->dims[d]);
    else
      n += ccshim__format(buf + n, cap - n, "%s%s", sep, a->dim_names[-1 - s->dims[d]]);
  }
  ccshim__format(buf + n, cap - n, "]");
}

/* Element k of an integer buffer, sign- or zero-extended. */
static int64_t element_value(const XLA_FFI_Buffer* b, int64_t k) {
  switch ((int)b->dtype) {
    case XLA_FFI_DataType_S8: return ((const int8_t*)b->data)[k];
    case XLA_FFI_DataType_S16: return ((const int16_t*)b->data)[k];
    case XLA_FFI_DataType_S32: return ((const int32_t*)b->data)[k];
    case XLA_FFI_DataType_U8: return ((const uint8_t*)b->data)[k];
    case XLA_FFI_DataType_U16: return ((const uint16_t*)b->data)[k];
    case XLA_FFI_DataType_U32: return ((const uint32_t*)b->data)[k];
    case XLA_FFI_DataType_U64: {
      uint64_t v = ((const uint64_t*)b->data)[k];
      return v > INT64_MAX ? -1 : (int64_t)v;
    }
    default: return ((const int64_t*)b->data)[k];
  }
}

/* Whether a buffer has exactly the spec's fixed dtype and dims. */
static int fixed_match(const XLA_FFI_Buffer* b, const leaf_spec* s) {
  return (int)b->dtype == s->dtype && b->rank == s->rank &&
         (s->rank == 0 ||
          (b->dims != NULL && memcmp(b->dims, s->dims, (size_t)s->rank * sizeof(int64_t)) == 0));
}

/* `[...n]`, `[...n, m]`: the product of the buffer's leading dims (all of
 * them in `[...n]`) is n, bound here when nothing bound it before, else
 * compared. */
static XLA_FFI_Error* check_count(const ccshim_adapter* a, const XLA_FFI_Api* api,
                                  const XLA_FFI_Buffer* b, int64_t lead, int64_t i, int64_t na,
                                  int32_t v, int64_t* value, int64_t* from, int32_t* from_dim,
                                  uint64_t* bound) {
  int64_t count = 1;
  for (int64_t d = 0; d < lead; d++) {
    if (b->dims[d] != 0 && count > INT64_MAX / b->dims[d]) {
      count = -1;
      break;
    }
    count *= b->dims[d];
  }
  if (!(*bound & (UINT64_C(1) << v))) {
    value[v] = count;
    from[v] = i;
    from_dim[v] = lead == b->rank ? -2 : -3;
    *bound |= UINT64_C(1) << v;
    return NULL;
  }
  if (count == value[v]) return NULL;
  char who[32], where[32], what[64];
  side_name(a, i, na, who, sizeof who);
  side_name(a, from[v], na, where, sizeof where);
  if (lead == b->rank)
    ccshim__format(what, sizeof what, "has %lld elements", (long long)count);
  else
    ccshim__format(what, sizeof what, "has %lld in its %lld leading dim(s)", (long long)count,
                   (long long)lead);
  return invalid(api, "%s: %s, but %s is %lld (%s of %s)", who, what, a->dim_names[v],
                 (long long)value[v],
                 from_dim[v] == -1   ? "the value"
                 : from_dim[v] == -2 ? "the element count"
                 : from_dim[v] == -3 ? "the leading dims' product"
                                     : "a dim",
                 where);
}

/* A shape-polymorphic signature: fixed dims as written; each name bound
 * once per call, to the value of the operand it is tied to, or else to the
 * first buffer that has it, and every other use compared with it. */
static XLA_FFI_Error* check_symbolic(const ccshim_adapter* a, const XLA_FFI_Api* api, void** args,
                                     void** rets, int64_t na, int64_t nr) {
  int64_t value[CCSHIM_MAX_DIM_NAMES];
  int64_t from[CCSHIM_MAX_DIM_NAMES]; /* buffer index, and -1 - d for its dim */
  int32_t from_dim[CCSHIM_MAX_DIM_NAMES];
  uint64_t bound = 0;
  char who[32], where[32], want[1400], got[1400];
  for (int32_t v = 0; v < a->num_dim_names; v++) {
    int32_t leaf = a->dim_operands[v];
    if (leaf < 0) continue;
    const XLA_FFI_Buffer* b = args[leaf];
    const leaf_spec* s = &a->specs[leaf];
    side_name(a, leaf, na, who, sizeof who);
    int64_t k = a->dim_elements[v] < 0 ? 0 : a->dim_elements[v];
    if (!fixed_match(b, s)) {
      ccshim__format_shape(got, sizeof got, (int)b->dtype, b->rank, b->dims);
      format_spec(a, s, want, sizeof want);
      return invalid(api, "%s: expected %s (the value of %s), got %s", who, want, a->dim_names[v],
                     got);
    }
    value[v] = element_value(b, k);
    if (value[v] < 0)
      return invalid(api, "%s: %s is %lld; a dimension size cannot be negative", who,
                     a->dim_names[v], (long long)value[v]);
    from[v] = leaf;
    from_dim[v] = -1;
    bound |= UINT64_C(1) << v;
  }
  for (int64_t i = 0; i < na + nr; i++) {
    const XLA_FFI_Buffer* b = i < na ? args[i] : rets[i - na];
    const leaf_spec* s = &a->specs[i];
    int rank_ok =
        (s->lead ? b->rank >= s->rank && b->rank <= CCSHIM_MAX_RANK : b->rank == s->rank) &&
        (b->rank == 0 || b->dims != NULL);
    if ((int)b->dtype != s->dtype || !rank_ok) {
      side_name(a, i, na, who, sizeof who);
      format_spec(a, s, want, sizeof want);
      if (b->rank < 0 || b->rank > CCSHIM_MAX_RANK || (b->rank > 0 && b->dims == NULL))
        ccshim__format(got, sizeof got, "dtype %d of rank %lld", (int)b->dtype, (long long)b->rank);
      else
        ccshim__format_shape(got, sizeof got, (int)b->dtype, b->rank, b->dims);
      return invalid(api, "%s: expected %s, got %s", who, want, got);
    }
    int64_t lead = b->rank - s->rank; /* 0 unless s->lead */
    if (s->count_var >= 0) {
      XLA_FFI_Error* e =
          check_count(a, api, b, lead, i, na, s->count_var, value, from, from_dim, &bound);
      if (e != NULL) return e;
    }
    for (int32_t w = 0; w < s->rank; w++) {
      int64_t d = lead + w, want_dim = s->dims[w], got_dim = b->dims[d];
      if (want_dim >= 0) {
        if (got_dim == want_dim) continue;
        side_name(a, i, na, who, sizeof who);
        format_spec(a, s, want, sizeof want);
        ccshim__format_shape(got, sizeof got, (int)b->dtype, b->rank, b->dims);
        return invalid(api, "%s: expected %s, got %s", who, want, got);
      }
      int32_t v = (int32_t)(-1 - want_dim);
      if (!(bound & (UINT64_C(1) << v))) {
        value[v] = got_dim;
        from[v] = i;
        from_dim[v] = (int32_t)d;
        bound |= UINT64_C(1) << v;
        continue;
      }
      if (got_dim == value[v]) continue;
      side_name(a, i, na, who, sizeof who);
      side_name(a, from[v], na, where, sizeof where);
      if (from_dim[v] == -1)
        return invalid(api,
                       "%s: dim %d is %lld, but %s is %lld (the value of %s): the size operand "
                       "and the buffer disagree",
                       who, (int)d, (long long)got_dim, a->dim_names[v], (long long)value[v],
                       where);
      if (from_dim[v] <= -2)
        return invalid(api, "%s: dim %d is %lld, but %s is %lld (the %s of %s)", who, (int)d,
                       (long long)got_dim, a->dim_names[v], (long long)value[v],
                       from_dim[v] == -2 ? "element count" : "leading dims' product", where);
      return invalid(api, "%s: dim %d is %lld, but %s is %lld (dim %d of %s)", who, (int)d,
                     (long long)got_dim, a->dim_names[v], (long long)value[v], (int)from_dim[v],
                     where);
    }
  }
  return NULL;
}

/* With a signature: every buffer's dtype, rank and dims. */
static XLA_FFI_Error* check_specs(const ccshim_adapter* a, const XLA_FFI_Api* api, void** args,
                                  void** rets, int64_t na, int64_t nr) {
  if (a->symbolic) return check_symbolic(a, api, args, rets, na, nr);
  for (int64_t i = 0; i < na + nr; i++) {
    const XLA_FFI_Buffer* b = i < na ? args[i] : rets[i - na];
    const leaf_spec* s = &a->specs[i];
    int same = (int)b->dtype == s->dtype && b->rank == s->rank &&
               (s->rank == 0 || (b->dims != NULL &&
                                 memcmp(b->dims, s->dims, (size_t)s->rank * sizeof(int64_t)) == 0));
    if (CCSHIM__LIKELY(same)) continue;
    char who[32], want[1400], got[1400];
    side_name(a, i, na, who, sizeof who);
    ccshim__format_shape(want, sizeof want, s->dtype, s->rank, s->dims);
    if (b->rank < 0 || b->rank > CCSHIM_MAX_RANK)
      ccshim__format(
          got, sizeof got, "%s of rank %lld",
          ccshim_dtype_name((int)b->dtype) ? ccshim_dtype_name((int)b->dtype) : "an unknown dtype",
          (long long)b->rank);
    else if (b->rank > 0 && b->dims == NULL)
      ccshim__format(got, sizeof got, "rank %lld with NULL dims", (long long)b->rank);
    else
      ccshim__format_shape(got, sizeof got, (int)b->dtype, b->rank, b->dims);
    return invalid(api, "%s: expected %s, got %s", who, want, got);
  }
  return NULL;
}

/* The opaque's length, refused past the largest attribute value a frame
 * carries (the frame builder's limit; XLA's are smaller), so that neither
 * len + 1 nor the copy can wrap. */
static XLA_FFI_Error* check_opaque_len(const ccshim_adapter* a, const XLA_FFI_Api* api,
                                       size_t len) {
  if (CCSHIM__LIKELY(len <= CCSHIM_FRAME_MAX_ATTR_BYTES)) return NULL;
  return invalid(api, "attribute '%s': %zu bytes; expected at most %u", a->opaque_name, len,
                 (unsigned)CCSHIM_FRAME_MAX_ATTR_BYTES);
}

/* Finds the opaque attribute.  Absent means empty, as XLA's legacy runtime
 * passes an empty backend config. */
static XLA_FFI_Error* find_opaque(const ccshim_adapter* a, const XLA_FFI_Api* api,
                                  const XLA_FFI_Attrs* attrs, const char** ptr, size_t* len) {
  *ptr = "";
  *len = 0;
  int64_t n = attrs->size;
  if (n == 0) return NULL;
  if (n < 0 || attrs->names == NULL || attrs->types == NULL || attrs->attrs == NULL)
    return invalid(api,
                   "malformed attributes: size %lld with names %p, types "
                   "%p, values %p",
                   (long long)n, (void*)attrs->names, (void*)attrs->types, (void*)attrs->attrs);
  for (int64_t i = 0; i < n; i++) {
    const XLA_FFI_ByteSpan* name = attrs->names[i];
    if (name == NULL || name->len != a->opaque_name_len ||
        (name->len && (name->ptr == NULL || memcmp(name->ptr, a->opaque_name, name->len) != 0)))
      continue;
    const void* v = attrs->attrs[i];
    if (v == NULL) return invalid(api, "attribute '%s': the value is NULL", a->opaque_name);
    if (attrs->types[i] == XLA_FFI_AttrType_STRING) {
      const XLA_FFI_ByteSpan* s = v;
      if (s->ptr == NULL && s->len > 0)
        return invalid(api, "attribute '%s': NULL bytes with length %zu", a->opaque_name, s->len);
      *ptr = s->ptr ? s->ptr : "";
      *len = s->len;
      return check_opaque_len(a, api, s->len);
    }
    if (attrs->types[i] == XLA_FFI_AttrType_ARRAY) {
      const XLA_FFI_Array* arr = v;
      if (arr->dtype == XLA_FFI_DataType_U8 || arr->dtype == XLA_FFI_DataType_S8) {
        if (arr->data == NULL && arr->size > 0)
          return invalid(api, "attribute '%s': NULL data with %zu elements", a->opaque_name,
                         arr->size);
        *ptr = arr->data ? arr->data : "";
        *len = arr->size;
        return check_opaque_len(a, api, arr->size);
      }
      const char* t = ccshim_dtype_name((int)arr->dtype);
      return invalid(api,
                     "attribute '%s': expected a string or a u8/s8 array, "
                     "got an array of %s",
                     a->opaque_name, t ? t : "unknown type");
    }
    static const char* const kinds[] = {"?", "array", "dictionary", "scalar", "string"};
    int k = (int)attrs->types[i];
    return invalid(api,
                   "attribute '%s': expected a string or a u8/s8 array, got "
                   "a %s",
                   a->opaque_name, k >= 1 && k <= 4 ? kinds[k] : "value of unknown kind");
  }
  return NULL;
}

/* ---------------------------------------------------------------------------
 * The slow branches of the call.
 * ------------------------------------------------------------------------ */

static XLA_FFI_Error* answer_metadata(const ccshim_adapter* a, XLA_FFI_CallFrame* f, int* handled) {
  XLA_FFI_InternalExtension* ext = f->extension_start;
  *handled = ext->type == XLA_FFI_Extension_Metadata;
  if (!*handled) return NULL;
  XLA_FFI_Metadata* md = ((XLA_FFI_Metadata_Extension*)ext)->metadata;
  if (ext->struct_size < XLA_FFI_Metadata_Extension_STRUCT_SIZE || md == NULL ||
      md->struct_size < XLA_FFI_Metadata_STRUCT_SIZE) {
    if (f->api == NULL) return NULL; /* nothing to report an error with */
    return invalid(f->api,
                   "malformed metadata query: extension size %zu "
                   "(expected >= %d), metadata %p of size %zu (expected >= %d)",
                   ext->struct_size, (int)XLA_FFI_Metadata_Extension_STRUCT_SIZE, (void*)md,
                   md ? md->struct_size : 0, (int)XLA_FFI_Metadata_STRUCT_SIZE);
  }
  md->api_version.struct_size = XLA_FFI_Api_Version_STRUCT_SIZE;
  md->api_version.extension_start = NULL;
  md->api_version.major_version = a->ffi_major;
  md->api_version.minor_version = a->ffi_minor;
  md->traits = a->traits;
  /* A query from any runtime but ours means XLA registered this handler and
   * may call it until the process ends. */
  if (f->api != ccshim_ffi_api()) atomic_store(&((ccshim_adapter*)a)->pinned, 1);
  return NULL;
}

XLA_FFI_Error* ccshim__kernel_failed(const ccshim_adapter* a, const XLA_FFI_Api* api,
                                     XlaCustomCallStatus* st) {
  XLA_FFI_Error* err;
  if (api == NULL) {
    err = NULL; /* XLA always passes one; without it nothing can be reported */
  } else if (!a->is_gpu) {
    /* CPU: INTERNAL with the kernel's message, as custom_call_thunk.cc. */
    err = make_error(api, XLA_FFI_Error_Code_INTERNAL, st->data);
  } else {
    /* GPU: INTERNAL "CustomCall failed: <message>", as
     * legacy_custom_call_thunk.cc. */
    static const char prefix[] = "CustomCall failed: ";
    char* msg = malloc(sizeof prefix + st->length);
    if (msg == NULL) {
      err = make_error(api, XLA_FFI_Error_Code_INTERNAL, st->data);
    } else {
      memcpy(msg, prefix, sizeof prefix - 1);
      memcpy(msg + sizeof prefix - 1, st->data, st->length + 1);
      err = make_error(api, XLA_FFI_Error_Code_INTERNAL, msg);
      free(msg);
    }
  }
  ccshim__status_release(st);
  return err;
}

/* ---------------------------------------------------------------------------
 * The call
 * ------------------------------------------------------------------------ */

XLA_FFI_Error* ccshim__adapter_call(const ccshim_adapter* a, XLA_FFI_CallFrame* f) {
  if (CCSHIM__UNLIKELY(a == NULL || f == NULL)) return NULL;
  const XLA_FFI_Api* api = f->api;
  if (CCSHIM__UNLIKELY(f->struct_size < XLA_FFI_CallFrame_STRUCT_SIZE))
    return invalid(api ? api : ccshim_ffi_api(),
                   "Unexpected XLA_FFI_CallFrame size: expected %d, got %zu",
                   (int)XLA_FFI_CallFrame_STRUCT_SIZE, f->struct_size);
  if (CCSHIM__UNLIKELY(f->extension_start != NULL)) {
    int handled;
    XLA_FFI_Error* err = answer_metadata(a, f, &handled);
    if (handled) return err;
  }
  if (CCSHIM__UNLIKELY(f->stage != XLA_FFI_ExecutionStage_EXECUTE)) return NULL;
  /* XLA always passes an API table to execute.  Without one a failure could
   * not be reported through the caller's runtime, so the kernel is not run,
   * and the refusal is made by ccshim's own table: a non-NULL error, never a
   * success that hides an unwritten result. */
  if (CCSHIM__UNLIKELY(api == NULL))
    return invalid(ccshim_ffi_api(),
                   "the call frame's api is NULL; the kernel was not called (XLA "
                   "passes its XLA_FFI_Api to every execute call)");

  const int64_t na = f->args.size, nr = f->rets.size;
  if (a->count_checked) {
    if (CCSHIM__UNLIKELY(na != a->num_args || nr != a->num_rets))
      return count_error(a, api, na, nr);
  } else if (CCSHIM__UNLIKELY((uint64_t)na > CCSHIM_FRAME_MAX_BUFFERS ||
                              (uint64_t)nr > CCSHIM_FRAME_MAX_BUFFERS)) {
    return count_error(a, api, na, nr);
  }
  void** const args = f->args.args;
  void** const rets = f->rets.rets;
  if (CCSHIM__UNLIKELY((na && args == NULL) || (nr && rets == NULL)))
    return invalid(api, "malformed frame: %s array is NULL with %lld entries",
                   na && args == NULL ? "the argument" : "the result",
                   (long long)(na && args == NULL ? na : nr));

  /* The legacy argument block: operand leaves then result leaves, which is
   * CPU in[] followed by a result table, and GPU buffers[] as it is. */
  void* local[LOCAL_PTRS];
  void** ptrs = local;
  const size_t need = (size_t)(na + nr) + (size_t)a->nested_len;
  if (CCSHIM__UNLIKELY(need > LOCAL_PTRS)) {
    ptrs = scratch_grow((void**)&tls_scratch.ptrs, &tls_scratch.ptr_cap, need * sizeof *ptrs);
    if (ptrs == NULL)
      return make_error(api, XLA_FFI_Error_Code_RESOURCE_EXHAUSTED,
                        "out of memory for the legacy argument block");
  }
  for (int64_t i = 0; i < na; i++) {
    const XLA_FFI_Buffer* b = args[i];
    if (CCSHIM__UNLIKELY(b == NULL)) return buffer_error(a, api, b, i, na);
    void* p = b->data;
    if (CCSHIM__UNLIKELY(p == NULL) && !may_be_null(b)) return buffer_error(a, api, b, i, na);
    ptrs[i] = p;
  }
  void** const results = ptrs + na;
  for (int64_t i = 0; i < nr; i++) {
    const XLA_FFI_Buffer* b = rets[i];
    if (CCSHIM__UNLIKELY(b == NULL)) return buffer_error(a, api, b, na + i, na);
    void* p = b->data;
    if (CCSHIM__UNLIKELY(p == NULL) && !may_be_null(b)) return buffer_error(a, api, b, na + i, na);
    results[i] = p;
  }
  if (a->specs != NULL) {
    XLA_FFI_Error* err = check_specs(a, api, args, rets, na, nr);
    if (CCSHIM__UNLIKELY(err != NULL)) return err;
  }

  /* The opaque bytes, for every form that receives them. */
  const char* opaque = NULL;
  size_t opaque_len = 0;
  char obuf[LOCAL_BYTES];
  if (a->form >= CCSHIM_FORM_CPU_V3) {
    const char* bytes;
    XLA_FFI_Error* err = find_opaque(a, api, &f->attrs, &bytes, &opaque_len);
    if (CCSHIM__UNLIKELY(err != NULL)) return err;
    /* Kernels may treat it as a C string: copy it with a NUL after the last
     * byte; a ByteSpan promises no terminator. */
    char* copy = obuf;
    if (CCSHIM__UNLIKELY(opaque_len >= LOCAL_BYTES)) {
      copy = scratch_grow((void**)&tls_scratch.bytes, &tls_scratch.byte_cap, opaque_len + 1);
      if (copy == NULL)
        return make_error(api, XLA_FFI_Error_Code_RESOURCE_EXHAUSTED,
                          "out of memory for the opaque bytes");
    }
    memcpy(copy, bytes, opaque_len);
    copy[opaque_len] = '\0';
    opaque = copy;
  }

  struct XlaCustomCallStatus_ status;
  ccshim__status_init(&status);
  if (a->form <= CCSHIM_FORM_CPU_V3) {
    void** in = ptrs;
    if (a->nested != NULL) {
      in = ptrs + na + nr;
      ccshim__nested_fill(a->nested, (size_t)a->nested_len, ptrs, in);
    }
    int tuple = a->count_checked ? a->tuple_result : nr != 1;
    void* out = tuple ? (void*)results : results[0];
    ccshim__run_kernel(a->fn, (form)a->form, out, in, NULL, opaque, opaque_len, &status);
  } else {
    /* Stream_Get is table entry 4, stable in every release. */
    XLA_FFI_Stream_Get_Args sargs;
    memset(&sargs, 0, sizeof sargs);
    sargs.struct_size = XLA_FFI_Stream_Get_Args_STRUCT_SIZE;
    sargs.ctx = f->ctx;
    XLA_FFI_Error* err = api->XLA_FFI_Stream_Get(&sargs);
    if (CCSHIM__UNLIKELY(err != NULL)) return err;
    ccshim__run_kernel(a->fn, (form)a->form, NULL, ptrs, sargs.stream, opaque, opaque_len, &status);
  }
  if (CCSHIM__UNLIKELY(status.engaged)) return ccshim__kernel_failed(a, api, &status);
  return NULL;
}

/* A freed adapter's prebuilt entry lands here until the entry is bound
 * again.  ccshim_adapter_free refuses to free what XLA or the embedded
 * registry may call, so only a stale handler pointer kept by hand can. */
static XLA_FFI_Error* call_freed(const ccshim_adapter* a, XLA_FFI_CallFrame* f) {
  (void)a;
  if (f == NULL || f->api == NULL || f->struct_size < XLA_FFI_CallFrame_STRUCT_SIZE) return NULL;
  return make_error(f->api, XLA_FFI_Error_Code_FAILED_PRECONDITION,
                    "this handler's ccshim adapter was freed; nothing was called");
}

const ccshim_adapter ccshim__freed_adapter = {.call = call_freed};
