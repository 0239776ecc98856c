/*
 * ccshim/signature.h -- custom-call signatures in HLO's shape syntax.
 *
 *   (f32[128], f32[2048]) -> f32[2048]
 *   ((f32[32], (f32[64], f32[128]), f32[256])) -> (f32[512], f32[1024])
 *   (s32[], token[]) -> (token[], u8[16]{0})
 *
 * The operands are listed in parentheses; the result is one shape, a tuple
 * when parenthesised (a one-element tuple stays a tuple).  Element types are
 * HLO's names (pred s8 s16 s32 s64 u8 u16 u32 u64 f16 bf16 f32 f64 c64 c128,
 * the f8 family, s1 s2 s4 u1 u2 u4, f4e2m1fn, token).  A layout suffix is
 * HLO's minor-to-major dimension order: f32[4,3]{1,0} is row-major (the
 * default, what a suffix-less array means), f32[4,3]{0,1} column-major.  It
 * must be a permutation of 0..rank-1; tiled layouts (`{1,0:T(8,128)}`) are
 * refused, as the FFI has none.  A typed-FFI buffer carries no layout, so an
 * adapter cannot check one at run time: ccshim_wrap refuses a layout other
 * than row-major unless the caller checks it (ccshim_wrap_options.layouts),
 * as ccshim.jax does at trace time.  Dynamic dimensions (`?`, `<=N`) are
 * refused: typed-FFI buffers always have static dimensions.
 *
 * Shape-polymorphic signatures: one registration for every shape, still
 * checked on every call.
 *
 *   (f32[n,m], f32[m]) -> f32[n]            named dims, shared
 *   (m: s32[], n: s32[], a: f32[m,n]) -> f32[n]
 *                                           a dim tied to a scalar's value
 *   (s32[], u8[...]) -> f32[...]            any dims: the dtype is checked
 *   (sz: s64[1], x: f64[sz[0]]) -> f64[sz[0]]
 *                                           a dim tied to an element of a
 *                                           small integer array
 *   (n: s64[], x: f32[...n]) -> f32[...n]   any dims whose element count is n
 *   (b: s32[], a: f32[...b,m,n]{0,1}) -> s32[...b]
 *                                           leading dims (any number, their
 *                                           product b) before the ones written
 *
 * A dimension written as a name is the same size in every buffer that
 * names it: the first buffer that has it (operands, then results, depth
 * first) sets it, the others must agree.  A top-level operand may be named
 * as an HLO parameter is (`m: s32[]`); a dimension of the same name is then
 * the value that operand holds at run time (it must be an integer scalar;
 * read on the host, so on CPU only), so that a size operand that disagrees
 * with its buffer is refused with both numbers instead of crashing the
 * kernel.  `[...]` checks the element type only; `[...n]` any dims whose
 * product is n (a name, shared or tied as any other).  `...` may also come
 * before dims written as usual, `[...b, m, n]`: zero or more leading dims
 * (their product b when named), then the trailing dims m and n, the form
 * of a batch that one call takes whole (jaxlib's LAPACK kernels, whose b
 * operand is the batch size).  A layout then orders the trailing dims and
 * the leading ones are majormost, row-major among themselves: `{0,1}` of
 * [...b,m,n] is {1,2,0} for a rank-3 buffer, as jaxlib laid batches out
 * (and as jax.ffi.ffi_call's batching rule extends a layout).  A dimension written
 * `name[k]` is element k of the operand of that name, an integer array of
 * fixed dims (a size carried in an array: veros's s64[1], mpi4jax's s32[1]
 * counts, an FFT's s32[r] shape), read on the host as a scalar tie is.
 */
#ifndef CCSHIM_SIGNATURE_H
#define CCSHIM_SIGNATURE_H

#include "ccshim/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest rank and tuple nesting a signature may have.  XLA itself sets
 * no such limit; real shapes stay far below these. */
#define CCSHIM_MAX_RANK 64
#define CCSHIM_MAX_NESTING 32
/* The most distinct dimension names one signature may use. */
#define CCSHIM_MAX_DIM_NAMES 64
/* What ccshim_shape.dims holds for a dimension written as a name. */
#define CCSHIM_DIM_NAMED (-1)

typedef struct ccshim_shape ccshim_shape;

/* One node of a shape tree.  Arrays (tokens included) are leaves. */
struct ccshim_shape {
  int is_tuple;
  int dtype;           /* XLA_FFI_DataType number; 0 for tuples */
  int64_t rank;        /* arrays only */
  const int64_t* dims; /* `rank` entries; arrays only */
  size_t num_children; /* tuples only */
  const ccshim_shape* children;
  size_t num_leaves; /* array leaves in this subtree (1 for an array) */
  size_t first_leaf; /* index of its first leaf among its side's leaves */
  /* Arrays: the layout written after the dims, minor-to-major (`rank`
   * entries), or NULL when none was written (row-major). */
  const int64_t* layout;
  /* Arrays: per dim, its name (one of the signature's dim_names, the same
   * pointer), or NULL for a fixed size (dims[i] is CCSHIM_DIM_NAMED where
   * it is a name); NULL when every dim is fixed. */
  const char* const* dim_names;
  /* Arrays written with `...`: any number of leading dims come before the
   * `rank` dims written (`[...]` and `[...n]` have rank 0, dims NULL;
   * `[...b,m,n]` rank 2); the layout, if any, orders the written dims. */
  int any_dims;
  /* A top-level operand written `name: shape`; NULL otherwise. */
  const char* name;
  /* Arrays written `[...n]` or `[...n, ...]`: the dimension name that the
   * product of the leading dims is (the element count in `[...n]`; one of
   * the signature's dim_names); NULL otherwise. */
  const char* elements_name;
};

/* Whether an array's layout is row-major (also when none was written). */
CCSHIM_API int ccshim_shape_is_row_major(const ccshim_shape* shape);

/* A parsed signature.  Everything it points at lives in the same object and
 * is released by ccshim_signature_free; treat it as read-only. */
typedef struct ccshim_signature {
  size_t num_operands;
  const ccshim_shape* operands; /* the top-level operand shapes */
  const ccshim_shape* result;   /* one shape, possibly a tuple */
  size_t num_arg_leaves;        /* operand leaves, depth first */
  const ccshim_shape* const* arg_leaves;
  size_t num_ret_leaves; /* result leaves, depth first */
  const ccshim_shape* const* ret_leaves;
  int has_tuple_operand; /* some operand is itself a tuple */
  /* The dimension names, in the order they first appear. */
  size_t num_dim_names;
  const char* const* dim_names;
  /* Per name: the operand leaf (index into arg_leaves) whose value it is,
   * or -1 when buffers' dims alone set it. */
  const int32_t* dim_operands;
  /* No named dims and no `[...]`: every buffer's shape is fixed. */
  int is_static;
  /* Per name: the element of dim_operands' leaf that holds it (`name[k]`),
   * or -1 when the operand is the scalar itself (or none is tied). */
  const int64_t* dim_elements;
} ccshim_signature;

/* Parses `text` (NUL-terminated).  pre: out != NULL.  On success *out owns a
 * new signature; on failure *out is NULL, the status is CCSHIM_ESIGNATURE (or
 * CCSHIM_EOVERFLOW, CCSHIM_ENOMEM) and ccshim_last_error() names the 1-based
 * column and what was expected there, e.g.
 *   "signature column 9: expected ']' after dimensions, found ','". */
CCSHIM_API ccshim_status ccshim_signature_parse(const char* text, ccshim_signature** out);

/* Frees a signature from ccshim_signature_parse; NULL is ignored. */
CCSHIM_API void ccshim_signature_free(ccshim_signature* sig);

/* Writes the canonical text of a shape ("(f32[2,3]{0,1}, s8[])", a layout
 * only where one was written) into buf, which
 * always ends in NUL; returns the length it needed (as snprintf does). */
CCSHIM_API size_t ccshim_shape_format(const ccshim_shape* shape, char* buf, size_t cap);

/* Writes the canonical text of the whole signature; as ccshim_shape_format. */
CCSHIM_API size_t ccshim_signature_format(const ccshim_signature* sig, char* buf, size_t cap);

/* Element count of an array shape, or -1 on overflow. */
CCSHIM_API int64_t ccshim_shape_elements(const ccshim_shape* shape);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CCSHIM_SIGNATURE_H */
