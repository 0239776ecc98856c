/*
 * A recursive-descent parser for custom-call signatures in HLO shape syntax.
 * Nodes live in an arena owned by the signature, so one free releases all.
 */
#include "ccshim/signature.h"

#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base_internal.h"

typedef struct chunk {
  struct chunk* next;
  size_t used, cap;
  alignas(max_align_t) unsigned char data[];
} chunk;

typedef struct signature_impl {
  ccshim_signature pub; /* first, so the public pointer is the impl pointer */
  chunk* chunks;
} signature_impl;

typedef struct parser {
  const char* text;
  size_t pos;
  signature_impl* sig;
  ccshim_status status; /* CCSHIM_OK until the first error */
  /* Dimension names, in order of first appearance, and where each first
   * appeared (for error columns). */
  const char* names[CCSHIM_MAX_DIM_NAMES];
  size_t name_pos[CCSHIM_MAX_DIM_NAMES];
  size_t num_names;
  int symbolic;        /* some named dim or `[...]` */
  int operand_list;    /* parsing the top-level operand list */
  size_t* operand_pos; /* per top-level operand: where its name is */
  size_t operand_pos_cap;
} parser;

static void* arena_alloc(signature_impl* sig, size_t size) {
  if (size > SIZE_MAX / 2) return NULL;
  size = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
  chunk* c = sig->chunks;
  if (c == NULL || c->cap - c->used < size) {
    size_t cap = size > 4096 ? size : 4096;
    c = malloc(sizeof(chunk) + cap);
    if (c == NULL) return NULL;
    c->next = sig->chunks;
    c->used = 0;
    c->cap = cap;
    sig->chunks = c;
  }
  void* p = c->data + c->used;
  c->used += size;
  memset(p, 0, size);
  return p;
}

static void describe(const parser* p, char* buf, size_t cap) {
  unsigned char c = (unsigned char)p->text[p->pos];
  if (c == '\0')
    ccshim__format(buf, cap, "end of text");
  else if (c >= 0x20 && c < 0x7f)
    ccshim__format(buf, cap, "'%c'", c);
  else
    ccshim__format(buf, cap, "byte 0x%02x", c);
}

/* Records the first error only: later ones are consequences of it. */
static int expected(parser* p, const char* what) {
  if (p->status == CCSHIM_OK) {
    char found[32];
    describe(p, found, sizeof found);
    p->status = ccshim__fail(CCSHIM_ESIGNATURE, "signature column %zu: expected %s, found %s",
                             p->pos + 1, what, found);
  }
  return 0;
}

static int fail_at(parser* p, size_t pos, ccshim_status status, const char* what) {
  if (p->status == CCSHIM_OK)
    p->status = ccshim__fail(status, "signature column %zu: %s", pos + 1, what);
  return 0;
}

static void skip_ws(parser* p) {
  while (p->text[p->pos] == ' ' || p->text[p->pos] == '\t' || p->text[p->pos] == '\n' ||
         p->text[p->pos] == '\r')
    p->pos++;
}

static int accept(parser* p, char c) {
  skip_ws(p);
  if (p->text[p->pos] != c) return 0;
  p->pos++;
  return 1;
}

static int is_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static int parse_shape(parser* p, ccshim_shape* out, int depth);

static int is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* A copy of text[start, end) in the signature's arena, or NULL. */
static const char* arena_name(parser* p, size_t start, size_t end) {
  char* copy = arena_alloc(p->sig, end - start + 1);
  if (copy == NULL) return NULL;
  memcpy(copy, p->text + start, end - start);
  copy[end - start] = '\0';
  return copy;
}

/* The index of the dimension name text[start, end), added when new; -1
 * after recording an error. */
static int32_t dim_name(parser* p, size_t start, size_t end) {
  size_t len = end - start;
  for (size_t i = 0; i < p->num_names; i++)
    if (strlen(p->names[i]) == len && memcmp(p->names[i], p->text + start, len) == 0)
      return (int32_t)i;
  if (p->num_names == CCSHIM_MAX_DIM_NAMES) {
    fail_at(p, start, CCSHIM_EOVERFLOW, "more than 64 dimension names");
    return -1;
  }
  const char* name = arena_name(p, start, end);
  if (name == NULL) {
    fail_at(p, start, CCSHIM_ENOMEM, "out of memory");
    return -1;
  }
  p->names[p->num_names] = name;
  p->name_pos[p->num_names] = start;
  return (int32_t)p->num_names++;
}

/* `{...}` after an array's dims: HLO's minor-to-major order, a permutation
 * of 0..rank-1.  Tiling and memory spaces (after ':') are refused. */
static int parse_layout(parser* p, ccshim_shape* out) {
  size_t start = p->pos;
  p->pos++; /* '{' */
  int64_t order[CCSHIM_MAX_RANK];
  int64_t n = 0;
  uint64_t seen = 0;
  skip_ws(p);
  if (p->text[p->pos] != '}') {
    for (;;) {
      skip_ws(p);
      size_t at = p->pos;
      if (p->text[p->pos] < '0' || p->text[p->pos] > '9')
        return expected(p, "a dimension number in the layout");
      int64_t v = 0; /* saturates: any number past the rank is refused */
      for (; p->text[p->pos] >= '0' && p->text[p->pos] <= '9'; p->pos++)
        v = v > CCSHIM_MAX_RANK ? v : v * 10 + (p->text[p->pos] - '0');
      if (v >= out->rank) {
        char msg[120];
        int digits = (int)(p->pos - at);
        ccshim__format(msg, sizeof msg,
                       "layout names dimension %.*s%s, but the array has rank %lld",
                       digits > 24 ? 24 : digits, p->text + at, digits > 24 ? "..." : "",
                       (long long)out->rank);
        return fail_at(p, at, CCSHIM_ESIGNATURE, msg);
      }
      if (seen & (UINT64_C(1) << v)) {
        char msg[80];
        ccshim__format(msg, sizeof msg, "layout names dimension %lld twice", (long long)v);
        return fail_at(p, at, CCSHIM_ESIGNATURE, msg);
      }
      seen |= UINT64_C(1) << v;
      order[n++] = v;
      skip_ws(p);
      if (p->text[p->pos] == ':')
        return fail_at(p, p->pos, CCSHIM_ESIGNATURE,
                       "tiled layouts and memory spaces are not supported: "
                       "the FFI passes untiled buffers");
      if (p->text[p->pos] == ',') {
        p->pos++;
        continue;
      }
      if (p->text[p->pos] != '}') return expected(p, "',' or '}' in the layout");
      break;
    }
  }
  if (n != out->rank) {
    char msg[120];
    ccshim__format(msg, sizeof msg, "layout lists %lld dimension(s); the array has rank %lld",
                   (long long)n, (long long)out->rank);
    return fail_at(p, start, CCSHIM_ESIGNATURE, msg);
  }
  p->pos++; /* '}' */
  int64_t* copy = arena_alloc(p->sig, sizeof(int64_t) * (size_t)(n ? n : 1));
  if (copy == NULL) return fail_at(p, p->pos, CCSHIM_ENOMEM, "out of memory");
  if (n) memcpy(copy, order, sizeof(int64_t) * (size_t)n);
  out->layout = copy;
  return 1;
}

/* Moves past a dimension name: `n`, or `n[k]` (element k of operand n). */
static int scan_dim_name(parser* p) {
  while (is_ident(p->text[p->pos])) p->pos++;
  if (p->text[p->pos] != '[') return 1;
  p->pos++;
  if (p->text[p->pos] < '0' || p->text[p->pos] > '9')
    return expected(p, "an element index after '[' (name[k]: element k of operand name)");
  size_t digits = p->pos;
  while (p->text[p->pos] >= '0' && p->text[p->pos] <= '9') p->pos++;
  if (p->pos - digits > 9) return fail_at(p, digits, CCSHIM_EOVERFLOW, "element index too large");
  if (p->text[p->pos] != ']') return expected(p, "']' after the element index");
  p->pos++;
  return 1;
}

static int parse_dims(parser* p, ccshim_shape* out) {
  int64_t dims[CCSHIM_MAX_RANK];
  const char* vars[CCSHIM_MAX_RANK];
  int64_t rank = 0;
  int named = 0;
  skip_ws(p);
  if (strncmp(p->text + p->pos, "...", 3) == 0) {
    /* Leading dims, any number of them: `[...]`, `[...n]` (their product is
     * n), then the trailing dims written as usual: `[...b, m, n]`. */
    p->pos += 3;
    skip_ws(p);
    if (is_name_start(p->text[p->pos])) {
      size_t at = p->pos;
      if (!scan_dim_name(p)) return 0;
      int32_t index = dim_name(p, at, p->pos);
      if (index < 0) return 0;
      out->elements_name = p->names[index];
      skip_ws(p);
    }
    out->any_dims = 1;
    p->symbolic = 1;
    if (p->text[p->pos] == ',') {
      p->pos++;
      skip_ws(p);
      if (p->text[p->pos] == ']') return expected(p, "a dimension after ',' (the trailing dims)");
    } else if (p->text[p->pos] != ']') {
      return expected(p,
                      "']' or ',' after '...' (leading dims), or a name for their element count");
    }
  }
  if (p->text[p->pos] != ']') {
    for (;;) {
      skip_ws(p);
      size_t at = p->pos;
      char c = p->text[p->pos];
      if (c == '?' || c == '<')
        return fail_at(p, at, CCSHIM_ESIGNATURE,
                       "dynamic dimensions are not supported: typed-FFI "
                       "buffers have static dimensions");
      /* A size, or a name shared with the other buffers that use it. */
      const char* name = NULL;
      int64_t v = 0;
      if (is_name_start(c)) {
        if (!scan_dim_name(p)) return 0;
        int32_t index = dim_name(p, at, p->pos);
        if (index < 0) return 0;
        name = p->names[index];
        v = CCSHIM_DIM_NAMED;
        named = 1;
      } else {
        if (c < '0' || c > '9') return expected(p, "a dimension size or name");
        while (p->text[p->pos] >= '0' && p->text[p->pos] <= '9') {
          int d = p->text[p->pos] - '0';
          if (v > (INT64_MAX - d) / 10)
            return fail_at(p, at, CCSHIM_EOVERFLOW, "dimension size overflows int64");
          v = v * 10 + d;
          p->pos++;
        }
      }
      if (rank == CCSHIM_MAX_RANK)
        return fail_at(p, at, CCSHIM_EOVERFLOW, "rank exceeds ccshim's limit of 64");
      vars[rank] = name;
      dims[rank++] = v;
      skip_ws(p);
      if (p->text[p->pos] == ',') {
        p->pos++;
        continue;
      }
      if (p->text[p->pos] != ']') return expected(p, "',' or ']' after a dimension");
      break;
    }
  }
  p->pos++; /* ']' */
  out->rank = rank;
  if (rank > 0) {
    int64_t* copy = arena_alloc(p->sig, sizeof(int64_t) * (size_t)rank);
    if (copy == NULL) return fail_at(p, p->pos, CCSHIM_ENOMEM, "out of memory");
    memcpy(copy, dims, sizeof(int64_t) * (size_t)rank);
    out->dims = copy;
  }
  if (named) {
    const char** copy = arena_alloc(p->sig, sizeof(char*) * (size_t)rank);
    if (copy == NULL) return fail_at(p, p->pos, CCSHIM_ENOMEM, "out of memory");
    memcpy(copy, vars, sizeof(char*) * (size_t)rank);
    out->dim_names = copy;
    p->symbolic = 1;
  }
  return 1;
}

static int parse_array(parser* p, ccshim_shape* out) {
  skip_ws(p);
  size_t start = p->pos;
  while (is_ident(p->text[p->pos])) p->pos++;
  if (p->pos == start) return expected(p, "an element type such as f32 or '('");
  int dtype = ccshim_dtype_from_name(p->text + start, p->pos - start);
  if (dtype == CCSHIM__DTYPE_INVALID) {
    char msg[160];
    ccshim__format(msg, sizeof msg,
                   "unknown element type '%.*s' (expected an HLO name such as "
                   "pred, s32, u8, f16, bf16, f32, f64, c64 or token)",
                   (int)(p->pos - start > 40 ? 40 : p->pos - start), p->text + start);
    return fail_at(p, start, CCSHIM_ESIGNATURE, msg);
  }
  out->dtype = dtype;
  out->num_leaves = 1;
  skip_ws(p);
  if (p->text[p->pos] == '[') {
    p->pos++;
    if (!parse_dims(p, out)) return 0;
  } else if (dtype != CCSHIM__DTYPE_TOKEN) {
    return expected(p, "'[' after the element type");
  }
  if (dtype == CCSHIM__DTYPE_TOKEN && (out->rank != 0 || out->any_dims))
    return fail_at(p, start, CCSHIM_ESIGNATURE, "a token has no dimensions");
  if (!out->any_dims && out->dim_names == NULL) {
    int64_t elements = ccshim_shape_elements(out);
    int overflow = 0;
    if (elements < 0)
      overflow = 1;
    else
      (void)ccshim_dtype_bytes(dtype, (uint64_t)elements, &overflow);
    if (overflow) return fail_at(p, start, CCSHIM_EOVERFLOW, "the array's size in bytes overflows");
  }
  skip_ws(p);
  if (p->text[p->pos] == '{') {
    if (out->any_dims && out->rank == 0)
      return fail_at(p, p->pos, CCSHIM_ESIGNATURE,
                     "a layout needs the dims it orders, not [...] alone (write the trailing "
                     "dims it orders after the leading ones: [...b, m, n]{0,1})");
    return parse_layout(p, out);
  }
  return 1;
}

/* `name:` before a top-level operand, as HLO names parameters: looks ahead
 * for an identifier and a ':'; leaves the position alone when there is
 * none. */
static int operand_name(parser* p, const char** name, size_t* at) {
  skip_ws(p);
  size_t start = p->pos, end = start;
  if (!is_name_start(p->text[end])) return 1;
  while (is_ident(p->text[end])) end++;
  size_t colon = end;
  while (p->text[colon] == ' ' || p->text[colon] == '\t') colon++;
  if (p->text[colon] != ':') return 1;
  *name = arena_name(p, start, end);
  if (*name == NULL) return fail_at(p, start, CCSHIM_ENOMEM, "out of memory");
  *at = start;
  p->pos = colon + 1;
  return 1;
}

/* Parses "(shape, shape, ...)" after its '(' into a children array. */
static int parse_list(parser* p, ccshim_shape** items, size_t* count, int depth) {
  size_t cap = 0, n = 0;
  ccshim_shape* tmp = NULL;
  int ok = 1;
  if (!accept(p, ')')) {
    for (;;) {
      if (n == cap) {
        cap = cap ? cap * 2 : 4;
        ccshim_shape* grown = realloc(tmp, cap * sizeof *tmp);
        if (grown == NULL) {
          ok = fail_at(p, p->pos, CCSHIM_ENOMEM, "out of memory");
          break;
        }
        tmp = grown;
      }
      memset(&tmp[n], 0, sizeof tmp[n]);
      const char* name = NULL;
      size_t name_at = 0;
      if (p->operand_list && depth == 0 && !(ok = operand_name(p, &name, &name_at))) break;
      if (!parse_shape(p, &tmp[n], depth + 1)) {
        ok = 0;
        break;
      }
      if (name != NULL) {
        tmp[n].name = name;
        if (n >= p->operand_pos_cap) {
          size_t cap = p->operand_pos_cap ? 2 * p->operand_pos_cap : 8;
          while (cap <= n) cap *= 2;
          size_t* grown = realloc(p->operand_pos, cap * sizeof *grown);
          if (grown == NULL) {
            ok = fail_at(p, name_at, CCSHIM_ENOMEM, "out of memory");
            break;
          }
          p->operand_pos = grown;
          p->operand_pos_cap = cap;
        }
        p->operand_pos[n] = name_at;
      }
      n++;
      if (accept(p, ',')) continue;
      if (accept(p, ')')) break;
      ok = expected(p, "',' or ')' in a tuple");
      break;
    }
  }
  *items = NULL;
  *count = 0;
  if (ok && n > 0) {
    *items = arena_alloc(p->sig, n * sizeof **items);
    if (*items == NULL)
      ok = fail_at(p, p->pos, CCSHIM_ENOMEM, "out of memory");
    else
      memcpy(*items, tmp, n * sizeof **items);
    *count = n;
  }
  free(tmp);
  return ok;
}

static int parse_shape(parser* p, ccshim_shape* out, int depth) {
  if (depth > CCSHIM_MAX_NESTING)
    return fail_at(p, p->pos, CCSHIM_EOVERFLOW, "tuples nest deeper than ccshim's limit of 32");
  if (!accept(p, '(')) return parse_array(p, out);
  ccshim_shape* children;
  out->is_tuple = 1;
  if (!parse_list(p, &children, &out->num_children, depth)) return 0;
  out->children = children;
  for (size_t i = 0; i < out->num_children; i++) out->num_leaves += children[i].num_leaves;
  return 1;
}

static int is_size_operand(const ccshim_shape* s) {
  int d = s->dtype;
  return !s->is_tuple && !s->any_dims && s->rank == 0 &&
         ((d >= CCSHIM__DTYPE_S8 && d <= CCSHIM__DTYPE_S64) ||
          (d >= CCSHIM__DTYPE_U8 && d <= CCSHIM__DTYPE_U64));
}

static int is_integer_array(const ccshim_shape* s) {
  int d = s->dtype;
  return !s->is_tuple && !s->any_dims && s->dim_names == NULL &&
         ((d >= CCSHIM__DTYPE_S8 && d <= CCSHIM__DTYPE_S64) ||
          (d >= CCSHIM__DTYPE_U8 && d <= CCSHIM__DTYPE_U64));
}

/* A dimension name `op[k]` (element k of operand op): the operand's name
 * length and k; 0 for a plain name. */
static int element_name(const char* name, size_t* base_len, int64_t* k) {
  const char* bracket = strchr(name, '[');
  if (bracket == NULL) return 0;
  *base_len = (size_t)(bracket - name);
  *k = strtoll(bracket + 1, NULL, 10);
  return 1;
}

/* 1 when some dimension is the operand's value (`name`), 2 when some is an
 * element of it (`name[k]`), 3 both, 0 neither. */
static int names_dim(const parser* p, const char* name) {
  int uses = 0;
  size_t len = strlen(name), base;
  int64_t k;
  for (size_t v = 0; v < p->num_names; v++) {
    if (!strcmp(p->names[v], name)) uses |= 1;
    if (element_name(p->names[v], &base, &k) && base == len && !strncmp(p->names[v], name, len))
      uses |= 2;
  }
  return uses;
}

/* Every `op[k]` names an operand of fixed integer dims with a k-th element. */
static int check_elements(parser* p, const ccshim_shape* operands, size_t n) {
  for (size_t v = 0; v < p->num_names; v++) {
    size_t base;
    int64_t k;
    if (!element_name(p->names[v], &base, &k)) continue;
    const ccshim_shape* s = NULL;
    for (size_t i = 0; i < n && s == NULL; i++)
      if (operands[i].name && strlen(operands[i].name) == base &&
          !strncmp(operands[i].name, p->names[v], base))
        s = &operands[i];
    char msg[400], shape[256];
    if (s == NULL) {
      ccshim__format(msg, sizeof msg,
                     "dimension '%.40s' is an element of operand '%.*s', but no operand is "
                     "named so",
                     p->names[v], (int)(base > 40 ? 40 : base), p->names[v]);
      return fail_at(p, p->name_pos[v], CCSHIM_ESIGNATURE, msg);
    }
    int64_t count = is_integer_array(s) ? ccshim_shape_elements(s) : -1;
    if (count < 0 || k >= count) {
      ccshim_shape_format(s, shape, sizeof shape);
      ccshim__format(msg, sizeof msg,
                     "dimension '%.40s' is element %lld of operand '%.40s', %s, which %s",
                     p->names[v], (long long)k, s->name, shape,
                     count < 0 ? "is no integer array of fixed dims (s8..s64, u8..u64)"
                               : "has fewer elements");
      return fail_at(p, p->name_pos[v], CCSHIM_ESIGNATURE, msg);
    }
  }
  return 1;
}

/* Operand names: distinct, and one that a dimension uses must be an
 * integer scalar (its value is the dimension).  A size operand that no
 * dimension uses beside a dimension that no operand binds is almost surely
 * a misspelling, and the check it was meant for would silently not be
 * made: refused, naming both. */
static int tie_names(parser* p, const ccshim_shape* operands, size_t n) {
  size_t unused = n;
  for (size_t i = 0; i < n; i++) {
    if (operands[i].name == NULL) continue;
    for (size_t j = 0; j < i; j++)
      if (operands[j].name && strcmp(operands[j].name, operands[i].name) == 0) {
        char msg[160];
        ccshim__format(msg, sizeof msg, "operand name '%.40s' is used twice", operands[i].name);
        return fail_at(p, p->operand_pos[i], CCSHIM_ESIGNATURE, msg);
      }
    const ccshim_shape* s = &operands[i];
    int uses = names_dim(p, s->name);
    if (!uses) {
      if (unused == n && (is_size_operand(s) || is_integer_array(s))) unused = i;
      continue;
    }
    if ((uses & 1) && !is_size_operand(s)) {
      char shape[256], msg[400];
      ccshim_shape_format(s, shape, sizeof shape);
      ccshim__format(msg, sizeof msg,
                     "dimension '%.40s' names operand %zu, %s, which holds no size: a dimension "
                     "can be tied only to an integer scalar (s8..s64, u8..u64), or to an "
                     "element of an integer array as name[k]",
                     s->name, i, shape);
      return fail_at(p, p->operand_pos[i], CCSHIM_ESIGNATURE, msg);
    }
  }
  if (!check_elements(p, operands, n)) return 0;
  if (unused == n) return 1;
  for (size_t v = 0; v < p->num_names; v++) {
    size_t base;
    int64_t k;
    int bound = element_name(p->names[v], &base, &k);
    for (size_t i = 0; i < n && !bound; i++)
      bound = operands[i].name && !strcmp(operands[i].name, p->names[v]);
    if (bound) continue;
    char msg[400];
    ccshim__format(msg, sizeof msg,
                   "operand %zu is named '%.40s' but no dimension uses it, and dimension "
                   "'%.40s' is tied to no operand: a misspelling? (a size operand's name is "
                   "written in the dimensions it sizes)",
                   unused, operands[unused].name, p->names[v]);
    return fail_at(p, p->operand_pos[unused], CCSHIM_ESIGNATURE, msg);
  }
  return 1;
}

/* Numbers leaves depth first and stores pointers to them in `leaves`. */
static void index_leaves(ccshim_shape* s, const ccshim_shape** leaves, size_t* next) {
  s->first_leaf = *next;
  if (!s->is_tuple) {
    leaves[(*next)++] = s;
    return;
  }
  for (size_t i = 0; i < s->num_children; i++)
    index_leaves((ccshim_shape*)&s->children[i], leaves, next);
}

ccshim_status ccshim_signature_parse(const char* text, ccshim_signature** out) {
  if (out == NULL) return ccshim__fail(CCSHIM_EINVAL, "signature: out is NULL");
  *out = NULL;
  if (text == NULL) return ccshim__fail(CCSHIM_EINVAL, "signature: text is NULL");
  signature_impl* sig = calloc(1, sizeof *sig);
  if (sig == NULL) return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
  parser p;
  memset(&p, 0, sizeof p);
  p.text = text;
  p.sig = sig;

  ccshim_shape* operands = NULL;
  size_t num_operands = 0;
  ccshim_shape* result = arena_alloc(sig, sizeof *result);
  int ok = result != NULL;
  if (!ok) fail_at(&p, 0, CCSHIM_ENOMEM, "out of memory");
  if (ok && !accept(&p, '(')) ok = expected(&p, "'(' opening the operand list");
  p.operand_list = 1;
  if (ok) ok = parse_list(&p, &operands, &num_operands, 0);
  p.operand_list = 0;
  if (ok) {
    skip_ws(&p);
    if (p.text[p.pos] == '-' && p.text[p.pos + 1] == '>')
      p.pos += 2;
    else
      ok = expected(&p, "'->' between operands and result");
  }
  if (ok) ok = parse_shape(&p, result, 0);
  if (ok) {
    skip_ws(&p);
    if (p.text[p.pos] != '\0') ok = expected(&p, "end of text after the result");
  }
  if (ok) ok = tie_names(&p, operands, num_operands);
  free(p.operand_pos);
  if (!ok) {
    ccshim_status st = p.status;
    ccshim_signature_free(&sig->pub);
    return st;
  }

  size_t nargs = 0;
  for (size_t i = 0; i < num_operands; i++) nargs += operands[i].num_leaves;
  const ccshim_shape** arg_leaves = arena_alloc(sig, (nargs ? nargs : 1) * sizeof *arg_leaves);
  const ccshim_shape** ret_leaves =
      arena_alloc(sig, (result->num_leaves ? result->num_leaves : 1) * sizeof *ret_leaves);
  if (arg_leaves == NULL || ret_leaves == NULL) {
    ccshim_signature_free(&sig->pub);
    return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
  }
  size_t next = 0;
  for (size_t i = 0; i < num_operands; i++) {
    index_leaves(&operands[i], arg_leaves, &next);
    if (operands[i].is_tuple) sig->pub.has_tuple_operand = 1;
  }
  next = 0;
  index_leaves(result, ret_leaves, &next);

  sig->pub.num_operands = num_operands;
  sig->pub.operands = operands;
  sig->pub.result = result;
  sig->pub.num_arg_leaves = nargs;
  sig->pub.arg_leaves = arg_leaves;
  sig->pub.num_ret_leaves = result->num_leaves;
  sig->pub.ret_leaves = ret_leaves;
  sig->pub.is_static = !p.symbolic;
  sig->pub.num_dim_names = p.num_names;
  if (p.num_names > 0) {
    const char** names = arena_alloc(sig, p.num_names * sizeof *names);
    int32_t* tied = arena_alloc(sig, p.num_names * sizeof *tied);
    int64_t* elements = arena_alloc(sig, p.num_names * sizeof *elements);
    if (names == NULL || tied == NULL || elements == NULL) {
      ccshim_signature_free(&sig->pub);
      return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
    }
    for (size_t v = 0; v < p.num_names; v++) {
      names[v] = p.names[v];
      tied[v] = -1;
      elements[v] = -1;
      size_t base = strlen(names[v]);
      int64_t k = -1;
      if (!element_name(names[v], &base, &k)) k = -1;
      for (size_t i = 0; i < num_operands; i++)
        if (operands[i].name && strlen(operands[i].name) == base &&
            strncmp(operands[i].name, names[v], base) == 0) {
          tied[v] = (int32_t)operands[i].first_leaf;
          elements[v] = k;
        }
    }
    sig->pub.dim_names = names;
    sig->pub.dim_operands = tied;
    sig->pub.dim_elements = elements;
  }
  *out = &sig->pub;
  return CCSHIM_OK;
}

void ccshim_signature_free(ccshim_signature* pub) {
  if (pub == NULL) return;
  signature_impl* sig = (signature_impl*)pub;
  while (sig->chunks != NULL) {
    chunk* next = sig->chunks->next;
    free(sig->chunks);
    sig->chunks = next;
  }
  free(sig);
}

int64_t ccshim_shape_elements(const ccshim_shape* s) {
  if (s == NULL || s->is_tuple || s->any_dims) return -1;
  int64_t n = 1;
  for (int64_t i = 0; i < s->rank; i++) {
    if (s->dims[i] < 0) return -1;
    if (s->dims[i] != 0 && n > INT64_MAX / s->dims[i]) return -1;
    n *= s->dims[i];
  }
  return n;
}

/* Appends to buf like snprintf would, tracking the length it needed. */
typedef struct text_out {
  char* buf;
  size_t cap, len;
} text_out;

static void put(text_out* t, const char* s) {
  size_t n = strlen(s);
  if (t->len < t->cap) {
    size_t room = t->cap - t->len - 1;
    memcpy(t->buf + t->len, s, n < room ? n : room);
    t->buf[t->len + (n < room ? n : room)] = '\0';
  }
  t->len += n;
}

static void put_shape(text_out* t, const ccshim_shape* s) {
  if (s->name != NULL) {
    put(t, s->name);
    put(t, ": ");
  }
  if (s->is_tuple) {
    put(t, "(");
    for (size_t i = 0; i < s->num_children; i++) {
      if (i) put(t, ", ");
      put_shape(t, &s->children[i]);
    }
    put(t, ")");
    return;
  }
  char text[1400]; /* 64 dims of up to 20 digits, and the type name */
  if (s->any_dims || s->dim_names != NULL) {
    const char* dtype = ccshim_dtype_name(s->dtype);
    put(t, dtype ? dtype : "?");
    put(t, "[");
    if (s->any_dims) put(t, "...");
    if (s->any_dims && s->elements_name) put(t, s->elements_name);
    for (int64_t i = 0; i < s->rank; i++) {
      if (i || s->any_dims) put(t, ",");
      if (s->dim_names != NULL && s->dim_names[i] != NULL) {
        put(t, s->dim_names[i]);
      } else {
        ccshim__format(text, sizeof text, "%lld", (long long)s->dims[i]);
        put(t, text);
      }
    }
    put(t, "]");
  } else {
    ccshim__format_shape(text, sizeof text, s->dtype, s->rank, s->dims);
    put(t, text);
  }
  if (s->layout != NULL) {
    put(t, "{");
    for (int64_t i = 0; i < s->rank; i++) {
      ccshim__format(text, sizeof text, i ? ",%lld" : "%lld", (long long)s->layout[i]);
      put(t, text);
    }
    put(t, "}");
  }
}

int ccshim_shape_is_row_major(const ccshim_shape* s) {
  if (s == NULL || s->is_tuple) return 0;
  for (int64_t i = 0; s->layout != NULL && i < s->rank; i++)
    if (s->layout[i] != s->rank - 1 - i) return 0;
  return 1;
}

size_t ccshim_shape_format(const ccshim_shape* s, char* buf, size_t cap) {
  text_out t = {buf, cap, 0};
  if (cap) buf[0] = '\0';
  if (s) put_shape(&t, s);
  return t.len;
}

size_t ccshim_signature_format(const ccshim_signature* sig, char* buf, size_t cap) {
  text_out t = {buf, cap, 0};
  if (cap) buf[0] = '\0';
  if (sig == NULL) return 0;
  put(&t, "(");
  for (size_t i = 0; i < sig->num_operands; i++) {
    if (i) put(&t, ", ");
    put_shape(&t, &sig->operands[i]);
  }
  put(&t, ") -> ");
  put_shape(&t, sig->result);
  return t.len;
}
