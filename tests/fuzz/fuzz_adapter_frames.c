/*
 * Fuzzes adapters of every form and platform with call frames built by hand
 * from the fuzzer's bytes: random struct sizes, metadata extensions (good
 * and malformed), stages, counts (negative, too many), NULL arrays, NULL
 * buffer pointers, dtypes, ranks and dims, NULL data, attribute kinds and
 * names, an api and a context or none.  Edges past every internal block:
 * buffer counts from 127 to 600 (adapters whose signatures have 130 and 300
 * buffers among them), ranks up to 2^63 with real dims behind them, and
 * opaque lengths up to SIZE_MAX.  Every value is laid out as the kind
 * its type tag declares (no handler can detect a scalar disguised as a
 * string), otherwise anything goes.
 *
 * Properties: no crash and no sanitizer report; an error, when one comes,
 * is readable; a kernel, when it runs, gets what the adapter promises (data
 * pointers, a NUL-terminated opaque with its length, a stream on GPU); a
 * frame at the execute stage without an API table is refused, not run.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccshim/ccshim.h"
#include "fuzz_input.h"

/* --- Kernels that check their side of the contract ----------------------- */

static int fail_next;
static char fail_message[32];
static size_t fail_len;

static void check_opaque(const char* opaque, size_t len) {
  if (opaque == NULL || opaque[len] != '\0') abort();
}
static void maybe_fail(XlaCustomCallStatus* s) {
  if (fail_next) XlaCustomCallStatusSetFailure(s, fail_message, fail_len);
}
/* (out may be NULL: a single result with no elements, or a token, has no
 * address, in XLA as here.) */
static int kernel_ran;
static void cpu_v1(void* out, const void** in) {
  (void)out;
  (void)in;
  kernel_ran = 1;
}
static void cpu_v2(void* out, const void** in, XlaCustomCallStatus* s) {
  cpu_v1(out, in);
  maybe_fail(s);
}
static void cpu_v3(void* out, const void** in, const char* o, size_t n, XlaCustomCallStatus* s) {
  cpu_v1(out, in);
  check_opaque(o, n);
  maybe_fail(s);
}
/* For the nested signature below: in[0] is a table of two leaves. */
static void cpu_nested(void* out, const void** in, XlaCustomCallStatus* s) {
  const void* const* table = in[0];
  if (table == NULL || table[0] == NULL || table[1] == NULL) abort();
  cpu_v2(out, in, s);
}
static void gpu_v1(void* stream, void** buffers, const char* o, size_t n) {
  if (stream == NULL || buffers == NULL) abort();
  check_opaque(o, n);
  kernel_ran = 1;
}
/* For the wide signatures: every buffer is an f32[1] in the arena. */
static size_t wide_count;
static char arena[4096 + 64];
static void cpu_wide(void* out, const void** in, XlaCustomCallStatus* s) {
  for (size_t i = 0; i < wide_count; i++)
    if (in[i] != arena) abort();
  if (out != arena) abort();
  cpu_v2(out, in, s);
}
static void gpu_v2(void* stream, void** buffers, const char* o, size_t n, XlaCustomCallStatus* s) {
  gpu_v1(stream, buffers, o, n);
  maybe_fail(s);
}

/* --- The adapters, made once ------------------------------------------------ */

enum { NUM_ADAPTERS = 32 };                     /* 2 entry kinds x (4 signatures x 3 forms + 4) */
static const size_t wide_sizes[2] = {130, 300}; /* operands, and one result */

/* "(f32[1], ...) -> f32[1]" with n operands, in a static buffer. */
static const char* wide_signature(size_t n) {
  static char text[300 * 8 + 32];
  char* p = text;
  *p++ = '(';
  for (size_t i = 0; i < n; i++) p += sprintf(p, i ? ", f32[1]" : "f32[1]");
  strcpy(p, ") -> f32[1]");
  return text;
}
static ccshim_adapter* adapters[NUM_ADAPTERS];
static ccshim_context *host, *gpu;

static void make_adapters(void) {
  static const char* const sigs[] = {NULL, "(f32[4], s32[2,3]) -> f32[4]",
                                     "(f32[2], token[]) -> (s8[], f32[2])",
                                     /* leading dims: any rank from 1 (or 0) up */
                                     "(f32[...b,2], s32[...b]) -> (f32[...b,2], s32[...,b])"};
  int n = 0;
  for (int entry = CCSHIM_ENTRY_PREBUILT; entry <= CCSHIM_ENTRY_CLOSURE; entry++) {
    ccshim_wrap_options o = CCSHIM_WRAP_OPTIONS_INIT;
    o.entry = (ccshim_entry_kind)entry;
    o.allow_wx = 1;
    for (int s = 0; s < 4; s++) {
      ccshim_wrap((ccshim_legacy_fn)cpu_v1, 1, CCSHIM_PLATFORM_HOST, sigs[s], &o, &adapters[n++]);
      ccshim_wrap((ccshim_legacy_fn)cpu_v3, 3, CCSHIM_PLATFORM_HOST, sigs[s], &o, &adapters[n++]);
      ccshim_wrap((ccshim_legacy_fn)gpu_v2, 2, CCSHIM_PLATFORM_CUDA, sigs[s], &o, &adapters[n++]);
    }
    ccshim_wrap((ccshim_legacy_fn)cpu_v2, 2, CCSHIM_PLATFORM_HOST, NULL, &o, &adapters[n++]);
    for (int w = 0; w < 2; w++)
      ccshim_wrap((ccshim_legacy_fn)cpu_wide, 2, CCSHIM_PLATFORM_HOST,
                  wide_signature(wide_sizes[w]), &o, &adapters[n++]);
    o.tuple_operands = CCSHIM_TUPLES_NESTED;
    ccshim_wrap((ccshim_legacy_fn)cpu_nested, 2, CCSHIM_PLATFORM_HOST,
                "((f32[2], f32[2])) -> f32[2]", &o, &adapters[n++]);
  }
  if (n != NUM_ADAPTERS) abort();
  for (int i = 0; i < n; i++)
    if (adapters[i] == NULL) abort();
  ccshim_context_options co = CCSHIM_CONTEXT_OPTIONS_INIT;
  ccshim_context_new(&co, &host);
  co.platform = "cuda";
  ccshim_context_new(&co, &gpu);
  (void)gpu_v1;
}

/* --- Building a frame from the recipe ---------------------------------------- */

enum { MAX_BUF = 12, MAX_ATTR = 6, MAX_RANK = 64, WIDE_BUF = 600 };

typedef struct storage {
  XLA_FFI_CallFrame frame;
  XLA_FFI_Metadata_Extension ext;
  XLA_FFI_Metadata metadata;
  XLA_FFI_Buffer buffers[2 * MAX_BUF];
  int64_t dims[2 * MAX_BUF][MAX_RANK];
  XLA_FFI_Buffer wide; /* the one buffer every slot of a wide side shares */
  void* args[WIDE_BUF];
  void* rets[WIDE_BUF];
  XLA_FFI_ArgType arg_types[WIDE_BUF];
  XLA_FFI_RetType ret_types[WIDE_BUF];
  XLA_FFI_AttrType attr_types[MAX_ATTR];
  XLA_FFI_ByteSpan name_spans[MAX_ATTR];
  XLA_FFI_ByteSpan* names[MAX_ATTR];
  void* attr_values[MAX_ATTR];
  XLA_FFI_ByteSpan strings[MAX_ATTR];
  XLA_FFI_Scalar scalars[MAX_ATTR];
  XLA_FFI_Array arrays[MAX_ATTR];
  XLA_FFI_Attrs dicts[MAX_ATTR];
  char text[MAX_ATTR][24];
  int64_t scalar_values[MAX_ATTR];
} storage;

/* Every data pointer and byte string points in here: values start within
 * the first 8 bytes and are at most 4096 bytes (or 512 elements) long,
 * unless a length is one of the huge ones the adapter must refuse unread. */
static size_t huge_length(fuzz_input* in) {
  static const size_t huge[] = {(size_t)-1, (size_t)-2, ((size_t)1 << 30) + 1, (size_t)1 << 62,
                                (size_t)1 << 40};
  return huge[take_below(in, 5)];
}

static void fill_buffer(fuzz_input* in, XLA_FFI_Buffer* b, int64_t* dims) {
  memset(b, 0, sizeof *b);
  b->struct_size = XLA_FFI_Buffer_STRUCT_SIZE;
  b->dtype = (XLA_FFI_DataType)take_below(in, 36);
  b->data = take_below(in, 6) ? arena : NULL;
  unsigned r = take_below(in, 12);
  b->rank = r < 7     ? (int64_t)r
            : r == 7  ? -1
            : r == 8  ? 1000000
            : r == 9  ? MAX_RANK
            : r == 10 ? (int64_t)1 << 40
                      : take_i64(in);
  for (int d = 0; d < 8; d++) dims[d] = take_below(in, 8) ? take_below(in, 5) : take_i64(in);
  for (int d = 8; d < MAX_RANK; d++) dims[d] = 1;
  b->dims = take_below(in, 8) ? dims : NULL;
  /* The memory behind dims holds MAX_RANK entries, whatever rank claims: a
   * rank past it with dims set is what a careless runtime sends, and the
   * adapter must not read past the ranks it accepts (0..64). */
}

/* A side of `n` buffers (n past every internal block), all one f32[1] in
 * the arena, so that a wide signature matches; sometimes one is spoiled. */
static void fill_wide(fuzz_input* in, storage* s, void** ptrs, int64_t n, int side) {
  static int64_t one = 1;
  s->wide =
      (XLA_FFI_Buffer){XLA_FFI_Buffer_STRUCT_SIZE, NULL, XLA_FFI_DataType_F32, arena, 1, &one};
  for (int64_t i = 0; i < n; i++) {
    ptrs[i] = &s->wide;
    if (side)
      s->ret_types[i] = XLA_FFI_RetType_BUFFER;
    else
      s->arg_types[i] = XLA_FFI_ArgType_BUFFER;
  }
  if (take_below(in, 4) == 0) {
    int64_t k = (int64_t)(take_u32(in) % (uint32_t)n);
    XLA_FFI_Buffer* b = &s->buffers[side * MAX_BUF];
    fill_buffer(in, b, s->dims[side * MAX_BUF]);
    ptrs[k] = take_below(in, 4) ? b : NULL;
  }
}

static void build(fuzz_input* in, storage* s, const XLA_FFI_Api** api) {
  memset(s, 0, sizeof *s);
  XLA_FFI_CallFrame* f = &s->frame;
  static const size_t sizes[] = {168, 168, 168, 176, 0, 100, 167, 169};
  f->struct_size = sizes[take_below(in, 8)];
  if (take_below(in, 8) == 0) {
    s->ext.extension_base.struct_size = take_below(in, 2) ? 32 : take_below(in, 40);
    s->ext.extension_base.type =
        take_below(in, 4) ? XLA_FFI_Extension_Metadata : (XLA_FFI_InternalExtension_Type)7;
    s->ext.metadata = take_below(in, 6) ? &s->metadata : NULL;
    s->metadata.struct_size = take_below(in, 2) ? 36 : take_below(in, 48);
    f->extension_start = &s->ext.extension_base;
  }
  *api = take_below(in, 16) ? ccshim_ffi_api() : NULL;
  f->api = *api;
  unsigned c = take_below(in, 8);
  f->ctx = c == 0 ? NULL : c < 5 ? host : gpu;
  f->stage = (XLA_FFI_ExecutionStage)(take_below(in, 4) ? 3 : take_below(in, 7));

  static const int64_t wide_counts[] = {127, 128, 129, 130, 150, 300, 301, 600};
  int64_t counts[2];
  for (int side = 0; side < 2; side++) {
    unsigned n = take_below(in, 17);
    counts[side] = n <= MAX_BUF ? (int64_t)n
                   : n == 13    ? -1
                   : n >= 15    ? wide_counts[take_below(in, 8)]
                                : take_i64(in);
  }
  f->args.struct_size = XLA_FFI_Args_STRUCT_SIZE;
  f->rets.struct_size = XLA_FFI_Rets_STRUCT_SIZE;
  f->args.size = counts[0];
  f->rets.size = counts[1];
  /* Arrays large enough for any count that is in range; a count out of
   * range comes with NULL arrays, which the adapter must refuse unread. */
  for (int side = 0; side < 2; side++) {
    int wide = counts[side] > MAX_BUF && counts[side] <= WIDE_BUF;
    int in_range = (counts[side] >= 0 && counts[side] <= MAX_BUF) || wide;
    void** ptrs = side ? s->rets : s->args;
    if (wide) fill_wide(in, s, ptrs, counts[side], side);
    for (int i = 0; !wide && in_range && i < counts[side]; i++) {
      XLA_FFI_Buffer* b = &s->buffers[side * MAX_BUF + i];
      fill_buffer(in, b, s->dims[side * MAX_BUF + i]);
      ptrs[i] = take_below(in, 24) ? b : NULL;
      if (side)
        s->ret_types[i] = XLA_FFI_RetType_BUFFER;
      else
        s->arg_types[i] = XLA_FFI_ArgType_BUFFER;
    }
    int present = in_range && take_below(in, 16);
    if (side) {
      f->rets.rets = present ? s->rets : NULL;
      f->rets.types = s->ret_types;
    } else {
      f->args.args = present ? s->args : NULL;
      f->args.types = s->arg_types;
    }
  }

  f->attrs.struct_size = XLA_FFI_Attrs_STRUCT_SIZE;
  unsigned na = take_below(in, MAX_ATTR + 2);
  f->attrs.size = na <= MAX_ATTR ? (int64_t)na : -3;
  int attrs_ok = na <= MAX_ATTR;
  for (unsigned i = 0; attrs_ok && i < na; i++) {
    /* A name: often "opaque" (the default attribute), else fuzz bytes. */
    if (take_below(in, 2)) {
      s->name_spans[i] = (XLA_FFI_ByteSpan){"opaque", 6};
    } else {
      size_t n = take_bytes(in, s->text[i], 10);
      s->name_spans[i] = (XLA_FFI_ByteSpan){take_below(in, 16) ? s->text[i] : NULL, n};
    }
    s->names[i] = take_below(in, 24) ? &s->name_spans[i] : NULL;
    unsigned kind = take_below(in, 5); /* 0 is no valid kind */
    s->attr_types[i] = (XLA_FFI_AttrType)kind;
    unsigned how = take_below(in, 16);
    size_t len = how < 12 ? take_below(in, 40) : how < 15 ? take_u32(in) % 4096 : huge_length(in);
    const char* ptr = take_below(in, 16) ? arena + take_below(in, 8) : NULL;
    switch (kind) {
      case XLA_FFI_AttrType_STRING:
        s->strings[i] = (XLA_FFI_ByteSpan){ptr, ptr ? len : take_below(in, 3)};
        s->attr_values[i] = &s->strings[i];
        break;
      case XLA_FFI_AttrType_ARRAY:
        s->arrays[i].dtype = (XLA_FFI_DataType)take_below(in, 14);
        /* at most 8 bytes an element: in the arena, unless huge */
        s->arrays[i].size = len > 4096 ? len : len / 8;
        s->arrays[i].data = ptr ? (void*)ptr : NULL;
        s->attr_values[i] = &s->arrays[i];
        break;
      case XLA_FFI_AttrType_SCALAR:
        s->scalar_values[i] = take_i64(in);
        s->scalars[i].dtype = (XLA_FFI_DataType)take_below(in, 14);
        s->scalars[i].value = &s->scalar_values[i];
        s->attr_values[i] = &s->scalars[i];
        break;
      default: /* DICTIONARY, or the invalid kind 0 (laid out as a dictionary) */
        s->dicts[i].struct_size = XLA_FFI_Attrs_STRUCT_SIZE;
        s->attr_values[i] = &s->dicts[i];
        break;
    }
    if (take_below(in, 32) == 0) s->attr_values[i] = NULL;
  }
  int arrays = attrs_ok && take_below(in, 16);
  f->attrs.names = arrays ? s->names : NULL;
  f->attrs.types = arrays || take_below(in, 2) ? s->attr_types : NULL;
  f->attrs.attrs = arrays ? s->attr_values : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static int ready;
  if (!ready) {
    make_adapters();
    ready = 1;
  }
  fuzz_input in = {data, size};
  const ccshim_adapter* a = adapters[take_below(&in, NUM_ADAPTERS)];
  fail_next = take_below(&in, 4) == 0;
  fail_len = take_bytes(&in, fail_message, 20);
  fail_len += take_below(&in, 4); /* sometimes longer than the text */
  static storage s;
  const XLA_FFI_Api* api;
  build(&in, &s, &api);
  wide_count = s.frame.args.size > 0 ? (size_t)s.frame.args.size : 0;
  kernel_ran = 0;
  XLA_FFI_Error* err = ccshim_adapter_handler(a)(&s.frame);
  /* Without an API table nothing may run, and an execute call must not
   * come back as a success (ccshim's own table makes the refusal). */
  if (api == NULL && kernel_ran) abort();
  if (api == NULL && err == NULL && s.frame.stage == XLA_FFI_ExecutionStage_EXECUTE &&
      s.frame.struct_size >= XLA_FFI_CallFrame_STRUCT_SIZE && s.frame.extension_start == NULL)
    abort();
  if (err != NULL) {
    XLA_FFI_Error_Code code = ccshim_error_code(err);
    if (code <= XLA_FFI_Error_Code_OK || code > XLA_FFI_Error_Code_UNAUTHENTICATED) abort();
    if (ccshim_error_message(err) == NULL) abort();
    ccshim_error_free(err);
  }
  return 0;
}
