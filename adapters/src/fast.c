/*
 * The fast paths: one function per legacy form, chosen when the kernel is
 * wrapped, that handle the common case of a call in straight-line code and
 * hand everything else to ccshim__adapter_call (call.c), which handles every
 * case and words every error.  Because a fast path hands over before it has
 * done anything visible (the kernel is called last), the general path can
 * start the call again from the frame.
 *
 * The common case: a well-formed frame at the execute stage, counts as the
 * signature says (at most FAST_PTRS buffers in all; an adapter whose
 * signature has more never gets a fast path), an API table, every buffer
 * and data pointer non-NULL, dtypes and dims as the signature says, the
 * opaque (if the form takes one) shorter than FAST_OPAQUE bytes, and the flat
 * tuple layout.  Tokens and empty buffers (NULL data), nested tuples, large
 * frames and every malformed frame take the general path.
 */
#include <stddef.h>
#include <string.h>

#include "adapter_internal.h"
#include "status_impl.h"

/* Fewer than SMALL_LIMIT buffers a side are gathered one at a time by the
 * entry function; more, up to FAST_PTRS in all, by its wide twin, which
 * alone carries the vector set-up. */
enum { SMALL_LIMIT = 8, FAST_PTRS = 128, FAST_OPAQUE = 256 };
/* Operand counts (with one result) that have a function of their own. */
enum { FIXED_MAX_ARGS = 3 };

#define FAST static inline __attribute__((always_inline))

/* Copies the data pointers of n buffers into dst.  Returns 0, having maybe
 * written part of dst, when the array, a buffer pointer or a data pointer is
 * NULL.  Four at a time: the loop control is paid once per four. */
/* Plain inline (not always_inline), as the gathers are passed by pointer:
 * -O2 inlines each where it is the constant argument; -O0 calls it. */
static inline int gather_scalar(void** dst, void* const* src, int64_t n) {
  if (n == 0) return 1;
  if (CCSHIM__UNLIKELY(src == NULL)) return 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const XLA_FFI_Buffer* b0 = src[i];
    const XLA_FFI_Buffer* b1 = src[i + 1];
    const XLA_FFI_Buffer* b2 = src[i + 2];
    const XLA_FFI_Buffer* b3 = src[i + 3];
    if (CCSHIM__UNLIKELY(b0 == NULL || b1 == NULL || b2 == NULL || b3 == NULL)) return 0;
    void* p0 = b0->data;
    void* p1 = b1->data;
    void* p2 = b2->data;
    void* p3 = b3->data;
    if (CCSHIM__UNLIKELY(p0 == NULL || p1 == NULL || p2 == NULL || p3 == NULL)) return 0;
    dst[i] = p0;
    dst[i + 1] = p1;
    dst[i + 2] = p2;
    dst[i + 3] = p3;
  }
  for (; i < n; i++) {
    const XLA_FFI_Buffer* b = src[i];
    if (CCSHIM__UNLIKELY(b == NULL || b->data == NULL)) return 0;
    dst[i] = b->data;
  }
  return 1;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CCSHIM_HAVE_AVX2_PATH 1

/* The same with AVX2: four buffer pointers tested for NULL by one compare
 * before they are dereferenced; their four data pointers fetched by one
 * gather (no store to reload, so nothing waits on store forwarding), stored,
 * and tested for NULL as they go, with one branch for the whole array. */
static inline __attribute__((target("avx2"))) int gather_avx2(void** dst, void* const* src,
                                                              int64_t n) {
  if (n < 4) return gather_scalar(dst, src, n); /* no vector set-up for a few */
  if (CCSHIM__UNLIKELY(src == NULL)) return 0;
  const __m256i zero = _mm256_setzero_si256();
  __m256i null_data = zero;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256i b = _mm256_loadu_si256((const __m256i*)(src + i));
    __m256i null_buffer = _mm256_cmpeq_epi64(b, zero);
    if (CCSHIM__UNLIKELY(!_mm256_testz_si256(null_buffer, null_buffer))) return 0;
    /* data lies at offsetof(XLA_FFI_Buffer, data) from each buffer. */
    __m256i p =
        _mm256_i64gather_epi64((const long long*)(uintptr_t)offsetof(XLA_FFI_Buffer, data), b, 1);
    _mm256_storeu_si256((__m256i*)(dst + i), p);
    null_data = _mm256_or_si256(null_data, _mm256_cmpeq_epi64(p, zero));
  }
  if (CCSHIM__UNLIKELY(!_mm256_testz_si256(null_data, null_data))) return 0;
  for (; i < n; i++) {
    const XLA_FFI_Buffer* b = src[i];
    if (CCSHIM__UNLIKELY(b == NULL || b->data == NULL)) return 0;
    dst[i] = b->data;
  }
  return 1;
}
#endif

/* With a signature: one pass that checks each buffer's dtype, rank and
 * dims against it and copies its data pointer, as gather does. */
FAST int gather_checked(void** dst, void* const* src, const leaf_spec* specs, int64_t n) {
  if (n == 0) return 1;
  if (CCSHIM__UNLIKELY(src == NULL)) return 0;
  for (int64_t i = 0; i < n; i++) {
    const XLA_FFI_Buffer* b = src[i];
    const leaf_spec* s = &specs[i];
    if (CCSHIM__UNLIKELY(b == NULL || (int)b->dtype != s->dtype || b->rank != s->rank)) return 0;
    if (s->rank > 0) {
      const int64_t* dims = b->dims;
      if (CCSHIM__UNLIKELY(dims == NULL)) return 0;
      for (int32_t d = 0; d < s->rank; d++)
        if (CCSHIM__UNLIKELY(dims[d] != s->dims[d])) return 0;
    }
    void* p = b->data;
    if (CCSHIM__UNLIKELY(p == NULL)) return 0;
    dst[i] = p;
  }
  return 1;
}

/* Short-length equality and copy by two overlapping loads of the widest
 * size that fits, as memcmp/memcpy do inside, without a call: attribute
 * names and descriptors are mostly a few bytes.  They never read a byte
 * outside [p, p + n). */
FAST uint64_t load_n(const char* p, size_t w) {
  uint64_t v = 0;
  memcpy(&v, p, w); /* w is 1, 2, 4 or 8: a single load */
  return v;
}

FAST int short_equal(const char* a, const char* b, size_t n) {
  if (n >= 8) {
    if (n > 16) return memcmp(a, b, n) == 0;
    return load_n(a, 8) == load_n(b, 8) && load_n(a + n - 8, 8) == load_n(b + n - 8, 8);
  }
  if (n >= 4) return load_n(a, 4) == load_n(b, 4) && load_n(a + n - 4, 4) == load_n(b + n - 4, 4);
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

FAST void short_copy(char* dst, const char* src, size_t n) {
  if (n >= 8 && n <= 16) {
    uint64_t head = load_n(src, 8), tail = load_n(src + n - 8, 8);
    memcpy(dst, &head, 8);
    memcpy(dst + n - 8, &tail, 8);
  } else if (n >= 4 && n < 8) {
    uint64_t head = load_n(src, 4), tail = load_n(src + n - 4, 4);
    memcpy(dst, &head, 4);
    memcpy(dst + n - 4, &tail, 4);
  } else if (n > 16) {
    memcpy(dst, src, n);
  } else {
    for (size_t i = 0; i < n; i++) dst[i] = src[i];
  }
}

/* The opaque bytes, NUL-terminated into buf.  Returns 0 for anything the
 * general path must look at (a wrong attribute type, too long a value). */
FAST int opaque_of(const ccshim_adapter* a, const XLA_FFI_Attrs* attrs, char* buf, size_t* len) {
  *len = 0;
  buf[0] = '\0';
  const int64_t n = attrs->size;
  if (n == 0) return 1;
  if (CCSHIM__UNLIKELY(n < 0 || attrs->names == NULL || attrs->types == NULL ||
                       attrs->attrs == NULL))
    return 0;
  for (int64_t i = 0; i < n; i++) {
    const XLA_FFI_ByteSpan* name = attrs->names[i];
    if (name == NULL || name->len != a->opaque_name_len || name->ptr == NULL ||
        !short_equal(name->ptr, a->opaque_name, name->len))
      continue;
    const void* v = attrs->attrs[i];
    const char* ptr;
    size_t l;
    if (v == NULL) return 0;
    if (attrs->types[i] == XLA_FFI_AttrType_STRING) {
      ptr = ((const XLA_FFI_ByteSpan*)v)->ptr;
      l = ((const XLA_FFI_ByteSpan*)v)->len;
    } else if (attrs->types[i] == XLA_FFI_AttrType_ARRAY &&
               (((const XLA_FFI_Array*)v)->dtype == XLA_FFI_DataType_U8 ||
                ((const XLA_FFI_Array*)v)->dtype == XLA_FFI_DataType_S8)) {
      ptr = ((const XLA_FFI_Array*)v)->data;
      l = ((const XLA_FFI_Array*)v)->size;
    } else {
      return 0;
    }
    if (l >= FAST_OPAQUE || (ptr == NULL && l > 0)) return 0;
    short_copy(buf, ptr, l);
    buf[l] = '\0';
    *len = l;
    return 1;
  }
  return 1;
}

typedef int (*gather_fn)(void** dst, void* const* src, int64_t n);

/* The call itself, once the legacy argument block is in ptrs: the opaque,
 * the stream, the kernel, the status.  v1 forms take no status, so none is
 * made or read. */
FAST XLA_FFI_Error* finish_call(const ccshim_adapter* a, XLA_FFI_CallFrame* f, void** ptrs,
                                const int64_t na, const int64_t nr, const form form,
                                const int checked) {
  char opaque[FAST_OPAQUE];
  size_t opaque_len = 0;
  if (form >= CCSHIM_FORM_CPU_V3 && CCSHIM__UNLIKELY(!opaque_of(a, &f->attrs, opaque, &opaque_len)))
    return ccshim__adapter_call(a, f);
  const int has_status = form != CCSHIM_FORM_CPU_V1 && form != CCSHIM_FORM_GPU_V1;
  struct XlaCustomCallStatus_ status;
  if (has_status) ccshim__status_init(&status);
  if (form <= CCSHIM_FORM_CPU_V3) {
    void** results = ptrs + na;
    const int tuple = checked ? a->tuple_result : nr != 1;
    void* out = tuple ? (void*)results : results[0];
    ccshim__run_kernel(a->fn, form, out, ptrs, NULL, opaque, opaque_len, &status);
  } else {
    XLA_FFI_Stream_Get_Args sargs;
    sargs.struct_size = XLA_FFI_Stream_Get_Args_STRUCT_SIZE;
    sargs.extension_start = NULL;
    sargs.ctx = f->ctx;
    sargs.stream = NULL;
    XLA_FFI_Error* err = f->api->XLA_FFI_Stream_Get(&sargs);
    if (CCSHIM__UNLIKELY(err != NULL)) return err;
    ccshim__run_kernel(a->fn, form, NULL, ptrs, sargs.stream, opaque, opaque_len, &status);
  }
  if (has_status && CCSHIM__UNLIKELY(status.engaged))
    return ccshim__kernel_failed(a, f->api, &status);
  return NULL;
}

/* A few buffers' data pointers into dst, one at a time: no loop set-up,
 * few registers (so a short prologue); 0 when something is NULL. */
FAST int gather_small(void** dst, void* const* src, int64_t n) {
  if (n == 0) return 1;
  if (CCSHIM__UNLIKELY(src == NULL)) return 0;
  for (int64_t i = 0; i < n; i++) {
    const XLA_FFI_Buffer* b = src[i];
    if (CCSHIM__UNLIKELY(b == NULL)) return 0;
    void* p = b->data;
    if (CCSHIM__UNLIKELY(p == NULL)) return 0;
    dst[i] = p;
  }
  return 1;
}

/* The pointers of both sides into ptrs; 0 when the general path must look. */
FAST int gather_both(const ccshim_adapter* a, XLA_FFI_CallFrame* f, void** ptrs, const int64_t na,
                     const int64_t nr, const gather_fn gather, const int checked) {
  if (checked) /* the adapter has a signature: a->specs != NULL */
    return gather_checked(ptrs, f->args.args, a->specs, na) &&
           gather_checked(ptrs + na, f->rets.rets, a->specs + na, nr);
  return gather(ptrs, f->args.args, na) && gather(ptrs + na, f->rets.rets, nr);
}

/* The frame's header: 1 when the call goes on here, else *ret is the
 * answer (the general path's, for anything unusual). */
FAST int header_ok(const ccshim_adapter* a, XLA_FFI_CallFrame* f, XLA_FFI_Error** ret) {
  if (CCSHIM__UNLIKELY(f == NULL || f->struct_size < XLA_FFI_CallFrame_STRUCT_SIZE ||
                       f->extension_start != NULL || f->api == NULL)) {
    *ret = ccshim__adapter_call(a, f);
    return 0;
  }
  if (CCSHIM__UNLIKELY(f->stage != XLA_FFI_ExecutionStage_EXECUTE)) {
    *ret = NULL;
    return 0;
  }
  return 1;
}

/* Up to FAST_PTRS buffers, in a function of its own so that the vector
 * set-up (and the stack alignment it needs) is paid only by the calls that
 * use it: an adapter whose signature has SMALL_LIMIT buffers or more on a
 * side, and unsigned adapters' larger frames. */
FAST XLA_FFI_Error* wide_call(const ccshim_adapter* a, XLA_FFI_CallFrame* f, const form form,
                              const gather_fn gather, const int checked) {
  XLA_FFI_Error* ret;
  if (!header_ok(a, f, &ret)) return ret;
  const int64_t na = f->args.size, nr = f->rets.size;
  if (checked) {
    if (CCSHIM__UNLIKELY(na != a->num_args || nr != a->num_rets)) return ccshim__adapter_call(a, f);
  } else if (CCSHIM__UNLIKELY(((uint64_t)na | (uint64_t)nr) > FAST_PTRS / 2)) {
    return ccshim__adapter_call(a, f); /* also a negative count, as a huge unsigned one */
  }
  void* ptrs[FAST_PTRS];
  if (CCSHIM__UNLIKELY(!gather_both(a, f, ptrs, na, nr, gather, checked)))
    return ccshim__adapter_call(a, f);
  return finish_call(a, f, ptrs, na, nr, form, checked);
}

/* The call once the header is checked and the counts are known to fit:
 * gather, then finish.  With counts that are constants (an instantiation
 * for one arity) the compares are against constants and the gathers
 * unroll. */
FAST XLA_FFI_Error* counted_call(const ccshim_adapter* a, XLA_FFI_CallFrame* f, const form form,
                                 const int checked, const int64_t na, const int64_t nr) {
  /* Larger than the counts need: where the pointers and the status lie on
   * the stack matters to the time of a call from XLA (bench/jax_e2e.py
   * measured a 16-pointer block 3% slower end to end than this one, with
   * fewer instructions; stores that alias XLA's buffers modulo 4 KiB, most
   * likely).  The block costs nothing to reserve. */
  void* ptrs[FAST_PTRS];
  if (CCSHIM__UNLIKELY(!gather_both(a, f, ptrs, na, nr, gather_small, checked)))
    return ccshim__adapter_call(a, f);
  return finish_call(a, f, ptrs, na, nr, form, checked);
}

/* Fewer than SMALL_LIMIT buffers on each side, one at a time.  With a
 * signature the counts are known to fit (select_call saw them); without,
 * one compare sends larger (or negative) counts to `wide`, a constant in
 * each instantiation, a frame of 0 to FIXED_MAX_ARGS operands and one
 * result (the common custom call) goes to `by_count[operands]`, which
 * gathers with constant counts (no loop control, no test of the tuple), and
 * any other to `small`. */
FAST XLA_FFI_Error* fast_call(const ccshim_adapter* a, XLA_FFI_CallFrame* f, const form form,
                              const ccshim__call_fn wide, const ccshim__call_fn* by_count,
                              const ccshim__call_fn small, const int checked,
                              const int64_t fixed_na, const int64_t fixed_nr) {
  XLA_FFI_Error* ret;
  if (!header_ok(a, f, &ret)) return ret;
  /* With counts fixed at compile time (fixed_na >= 0: an instantiation for
   * one arity, chosen at wrap time), the compares are against constants. */
  const int64_t na = fixed_na >= 0 ? fixed_na : f->args.size;
  const int64_t nr = fixed_na >= 0 ? fixed_nr : f->rets.size;
  if (fixed_na >= 0) {
    if (CCSHIM__UNLIKELY(f->args.size != fixed_na || f->rets.size != fixed_nr))
      return ccshim__adapter_call(a, f);
  } else if (checked) {
    if (CCSHIM__UNLIKELY(na != a->num_args || nr != a->num_rets)) return ccshim__adapter_call(a, f);
  } else {
    /* Direct jumps, not one through the table: one indirect branch fewer
     * per call for the processor to predict. */
    if (by_count != NULL && nr == 1) switch (na) {
        case 0: return by_count[0](a, f);
        case 1: return by_count[1](a, f);
        case 2: return by_count[2](a, f);
        case 3: return by_count[3](a, f);
        default: break;
      }
    if (CCSHIM__UNLIKELY(((uint64_t)na | (uint64_t)nr) >= SMALL_LIMIT)) return wide(a, f);
    /* Kept out of line, as the others: this function then reserves no
     * stack, and its hand-overs are jumps. */
    return small(a, f);
  }
  return counted_call(a, f, form, checked, na, nr);
}

/* Without a signature, a frame of 0 to FIXED_MAX_ARGS operands and one
 * result, once fast_call has checked its header: one function per form and
 * operand count (shared by every instruction set: they gather one pointer
 * at a time). */
#define COUNTED_FN(name, form, n)                                             \
  static XLA_FFI_Error* name(const ccshim_adapter* a, XLA_FFI_CallFrame* f) { \
    return counted_call(a, f, form, 0, n, 1);                                 \
  }
#define COUNTED_ROW(fn, form) \
  COUNTED_FN(fn##_0, form, 0) \
  COUNTED_FN(fn##_1, form, 1) \
  COUNTED_FN(fn##_2, form, 2) \
  COUNTED_FN(fn##_3, form, 3) \
  static const ccshim__call_fn fn[FIXED_MAX_ARGS + 1] = {fn##_0, fn##_1, fn##_2, fn##_3};
COUNTED_ROW(counted_cpu_v1, CCSHIM_FORM_CPU_V1)
COUNTED_ROW(counted_cpu_v2, CCSHIM_FORM_CPU_V2)
COUNTED_ROW(counted_cpu_v3, CCSHIM_FORM_CPU_V3)
COUNTED_ROW(counted_gpu_v1, CCSHIM_FORM_GPU_V1)
COUNTED_ROW(counted_gpu_v2, CCSHIM_FORM_GPU_V23)

/* One function per form, per instruction set, and with or without a
 * signature, so that each is straight code for its case; each has a wide
 * twin, not inlined, for frames of SMALL_LIMIT buffers or more a side.
 * Without a signature (checked 0) each hands one-result frames of few
 * operands to its form's counted functions. */
#define BY_COUNT(checked, table) ((checked) ? NULL : (table))
#define FAST_FN(name, form, gather, checked, table, attr)                          \
  static __attribute__((noinline))                                                 \
  attr XLA_FFI_Error* name##_wide(const ccshim_adapter* a, XLA_FFI_CallFrame* f) { \
    return wide_call(a, f, form, gather, checked);                                 \
  }                                                                                \
  static __attribute__((noinline))                                                 \
  XLA_FFI_Error* name##_small(const ccshim_adapter* a, XLA_FFI_CallFrame* f) {     \
    return counted_call(a, f, form, checked, f->args.size, f->rets.size);          \
  }                                                                                \
  static XLA_FFI_Error* name(const ccshim_adapter* a, XLA_FFI_CallFrame* f) {      \
    return fast_call(a, f, form, name##_wide, BY_COUNT(checked, table),            \
                     BY_COUNT(checked, name##_small), checked, -1, -1);            \
  }
#define FAST_FORMS(suffix, gather, checked, attr)                                          \
  FAST_FN(fast_cpu_v1##suffix, CCSHIM_FORM_CPU_V1, gather, checked, counted_cpu_v1, attr)  \
  FAST_FN(fast_cpu_v2##suffix, CCSHIM_FORM_CPU_V2, gather, checked, counted_cpu_v2, attr)  \
  FAST_FN(fast_cpu_v3##suffix, CCSHIM_FORM_CPU_V3, gather, checked, counted_cpu_v3, attr)  \
  FAST_FN(fast_gpu_v1##suffix, CCSHIM_FORM_GPU_V1, gather, checked, counted_gpu_v1, attr)  \
  FAST_FN(fast_gpu_v2##suffix, CCSHIM_FORM_GPU_V23, gather, checked, counted_gpu_v2, attr) \
  static const ccshim__call_fn fast##suffix[] = {fast_cpu_v1##suffix, fast_cpu_v2##suffix, \
                                                 fast_cpu_v3##suffix, fast_gpu_v1##suffix, \
                                                 fast_gpu_v2##suffix};                     \
  static const ccshim__call_fn fast##suffix##_wide[] CCSHIM__UNUSED = {                    \
      fast_cpu_v1##suffix##_wide, fast_cpu_v2##suffix##_wide, fast_cpu_v3##suffix##_wide,  \
      fast_gpu_v1##suffix##_wide, fast_gpu_v2##suffix##_wide};

/* With a signature the checked gather is scalar, whatever the CPU. */
FAST_FORMS(_checked, gather_scalar, 1, )

/* With a signature of 0 to 3 operands and one result, the most common
 * shape of a custom call: one function per form and operand count. */
#define FIXED_FN(name, form, n)                                               \
  static XLA_FFI_Error* name(const ccshim_adapter* a, XLA_FFI_CallFrame* f) { \
    return fast_call(a, f, form, ccshim__adapter_call, NULL, NULL, 1, n, 1);  \
  }
#define FIXED_ARITIES(fn, form) \
  FIXED_FN(fn##_0, form, 0)     \
  FIXED_FN(fn##_1, form, 1) FIXED_FN(fn##_2, form, 2) FIXED_FN(fn##_3, form, 3)
FIXED_ARITIES(fixed_cpu_v1, CCSHIM_FORM_CPU_V1)
FIXED_ARITIES(fixed_cpu_v2, CCSHIM_FORM_CPU_V2)
FIXED_ARITIES(fixed_cpu_v3, CCSHIM_FORM_CPU_V3)
FIXED_ARITIES(fixed_gpu_v1, CCSHIM_FORM_GPU_V1)
FIXED_ARITIES(fixed_gpu_v2, CCSHIM_FORM_GPU_V23)
#define FIXED_ROW(fn) \
  { fn##_0, fn##_1, fn##_2, fn##_3 }
static const ccshim__call_fn fixed_one_result[][FIXED_MAX_ARGS + 1] = {
    FIXED_ROW(fixed_cpu_v1), FIXED_ROW(fixed_cpu_v2), FIXED_ROW(fixed_cpu_v3),
    FIXED_ROW(fixed_gpu_v1), FIXED_ROW(fixed_gpu_v2)};
FAST_FORMS(, gather_scalar, 0, )
#if defined(CCSHIM_HAVE_AVX2_PATH)
FAST_FORMS(_avx2, gather_avx2, 0, __attribute__((target("avx2"))))
static int use_avx2(void) {
  static int known = -1;
  if (known < 0) known = ccshim__cpu_has_avx2(); /* CPUID: base/src/cpu.c says why */
  return known;
}
#endif

ccshim__call_fn ccshim__select_call(const ccshim_adapter* a) {
  if (a->nested != NULL || a->symbolic || a->form > CCSHIM_FORM_GPU_V23)
    return ccshim__adapter_call;
  /* A signature fixes the counts, so a frame that fits it may have more
   * buffers than the stack block: decided here, once, for every call. */
  if (a->count_checked && (int64_t)a->num_args + a->num_rets > FAST_PTRS)
    return ccshim__adapter_call;
  if (a->specs != NULL && a->num_rets == 1 && a->num_args <= FIXED_MAX_ARGS)
    return fixed_one_result[a->form][a->num_args];
  if (a->specs != NULL)
    return a->num_args < SMALL_LIMIT && a->num_rets < SMALL_LIMIT ? fast_checked[a->form]
                                                                  : fast_checked_wide[a->form];
#if defined(CCSHIM_HAVE_AVX2_PATH)
  if (use_avx2()) return fast_avx2[a->form];
#endif
  return fast[a->form];
}
