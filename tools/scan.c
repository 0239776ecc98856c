/*
 * `ccshim scan DIR [--json]`: the inventory of legacy custom calls in a
 * source tree of C, C++, CUDA, HIP, Python and Cython.
 *
 * It reads each source file twice over: once with comments blanked (to read
 * string literals such as target names) and once with string contents
 * blanked as well (to find code: a registration quoted in a docstring is not
 * a registration).  Offsets are the same in both, so a match in one reads in
 * the other.  What it finds:
 *
 *   registrations  XLA_REGISTER_CUSTOM_CALL_TARGET[_WITH_SYM], the XLA_CPU_
 *                  variants, CustomCallTargetRegistry::Global()->Register,
 *                  EncapsulateFunction in a registrations() dict,
 *                  register_custom_call_target, register_cpu_custom_call_target,
 *                  register_ffi_target(..., api_version=0)
 *   call sites     custom_call(..., api_version=, backend_config=),
 *                  CustomCall[WithLayout|WithAliasing](...), CustomCallOp,
 *                  ffi_call(..., custom_call_api_version=N < 4)
 *   definitions    functions whose parameters are a legacy form: CPU v1, v2,
 *                  v3; GPU v1, v2/v3
 *   typed          XLA_FFI_DEFINE_HANDLER*, XLA_FFI_REGISTER_HANDLER,
 *                  register_ffi_target(...) with api_version 1 (the default)
 *
 * and joins them per target name.  Exit status: 0, or 1 when some file could
 * not be scanned (a binary or unreadable file with a source extension: one
 * line each on stderr, after the inventory of the rest), or 2 when DIR is
 * wrong.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools.h"

enum { NAME_CAP = 256, TEXT_CAP = 512, LINE_CAP = 4 * TEXT_CAP };
enum { MAX_FILE_BYTES = 64 << 20 };

typedef enum lang { LANG_C, LANG_PY } lang;
/* GPU when the vendor is not known (JAX's platform="gpu" means either). */
typedef enum plat { PLAT_UNKNOWN, PLAT_CPU, PLAT_CUDA, PLAT_ROCM, PLAT_GPU } plat;

static int is_gpu(plat p) { return p >= PLAT_CUDA; }

/* Legacy forms told apart by a definition's parameters.  GPU v2 and v3 have
 * the same parameters; only the call site's api_version tells them apart. */
typedef enum form { FORM_NONE, CPU_V1, CPU_V2, CPU_V3, GPU_V1, GPU_V23 } form;

typedef enum kind { REGISTRATION, CALL_SITE, DEFINITION, TYPED } kind;

typedef struct finding {
  kind kind;
  const char* file;         /* owned by the scan (scan.paths), any length */
  int line;
  char what[NAME_CAP];      /* the macro or function that was matched */
  char name[NAME_CAP];      /* target name; "" when computed at run time */
  char name_expr[TEXT_CAP]; /* the expression that computes it, then */
  char function[NAME_CAP];  /* registered or defined function; "" if unknown */
  char expr[TEXT_CAP];      /* registered kernel expression (Python) */
  char opaque[TEXT_CAP];    /* call site: the backend_config expression */
  char shapes[TEXT_CAP];    /* ffi_call: the result shapes expression */
  plat platform;
  int version;              /* call site: api_version, 0 when not known */
  int version_default;      /* the version came from the API's default */
  form form;                /* definition */
  lang lang;                /* of the file it is in */
  int cython;
  int cxx_linkage;          /* definition: C++ name mangling likely */
} finding;

typedef struct scan {
  finding* f;
  size_t n, cap;
  char** paths;             /* every file name a finding points at */
  size_t num_paths, paths_cap;
  size_t files, lines, errors;
  int json;
} scan;

/* Exits on no memory: a scan that silently left things out would mislead. */
static void* grow(void* p, size_t* cap, size_t elem, size_t want) {
  if (want <= *cap) return p;
  size_t n = *cap ? *cap : 16;
  while (n < want) n *= 2;
  void* q = realloc(p, n * elem);
  if (q == NULL) {
    fprintf(stderr, "ccshim scan: out of memory\n");
    exit(2);
  }
  *cap = n;
  return q;
}

static char* scan_strdup(const char* text) {
  char* d = strdup(text);
  if (d == NULL) {
    fprintf(stderr, "ccshim scan: out of memory\n");
    exit(2);
  }
  return d;
}

/* A copy of a file's name that lives as long as the scan. */
static const char* keep_path(scan* s, const char* path) {
  s->paths = grow(s->paths, &s->paths_cap, sizeof *s->paths, s->num_paths + 1);
  return s->paths[s->num_paths++] = scan_strdup(path);
}

static const char* form_text(form f) {
  static const char* const text[] = {"", "CPU v1", "CPU v2", "CPU v3", "GPU v1", "GPU v2/v3"};
  return text[f];
}

static const char* plat_text(plat p) {
  static const char* const text[] = {"unknown", "cpu", "cuda", "rocm", "gpu"};
  return text[p];
}

/* XLA's platform names and JAX's, any case. */
static plat plat_parse(const char* s) {
  if (!strcasecmp(s, "Host") || !strcasecmp(s, "cpu")) return PLAT_CPU;
  if (!strcasecmp(s, "CUDA")) return PLAT_CUDA;
  if (!strcasecmp(s, "ROCM")) return PLAT_ROCM;
  if (!strcasecmp(s, "gpu")) return PLAT_GPU;
  return PLAT_UNKNOWN;
}

/* --- A source file, twice over ------------------------------------------------ */

typedef struct source {
  const char* path;
  lang lang;
  int cython;
  char* code;  /* comments blanked */
  char* skel;  /* comments and string contents blanked */
  size_t len;
  size_t* line_at; /* offset where each line starts */
  size_t num_lines;
  /* Each opening bracket's offset and its closing one's (len when none),
   * matched in one pass, so that finding a call's end costs a search, not
   * a scan to the end of the file (quadratic on unbalanced text). */
  uint32_t* opens;
  uint32_t* closes;
  size_t num_opens;
  /* Offsets of `extern "C"`, found once. */
  size_t* externs;
  size_t num_externs, externs_cap;
} source;

/* Blanks comments in `code` and, in `skel`, string contents too.  Newlines
 * stay, so offsets and line numbers agree with the file. */
static void blank(source* src) {
  char* c = src->code;
  char* k = src->skel;
  size_t n = src->len;
  for (size_t i = 0; i < n;) {
    if (src->lang == LANG_C && c[i] == '/' && i + 1 < n && c[i + 1] == '/') {
      for (; i < n && c[i] != '\n'; i++) c[i] = k[i] = ' ';
    } else if (src->lang == LANG_C && c[i] == '/' && i + 1 < n && c[i + 1] == '*') {
      size_t j = i + 2;
      while (j + 1 < n && !(c[j] == '*' && c[j + 1] == '/')) j++;
      j = j + 1 < n ? j + 2 : n;
      for (; i < j; i++)
        if (c[i] != '\n') c[i] = k[i] = ' ';
    } else if (src->lang == LANG_PY && c[i] == '#') {
      for (; i < n && c[i] != '\n'; i++) c[i] = k[i] = ' ';
    } else if (c[i] == '"' || c[i] == '\'') {
      char q = c[i];
      int triple = src->lang == LANG_PY && i + 2 < n && c[i + 1] == q && c[i + 2] == q;
      /* C's '...' is a character literal: keep it short, so that a digit
       * separator (1'000) cannot swallow the file. */
      size_t j = i + (triple ? 3 : 1);
      for (; j < n; j++) {
        if (c[j] == '\\') {
          j++;
          continue;
        }
        if (!triple && c[j] == '\n') break; /* unterminated: stop at the line */
        if (c[j] == q && (!triple || (j + 2 < n && c[j + 1] == q && c[j + 2] == q))) break;
        if (src->lang == LANG_C && q == '\'' && j > i + 4) break;
      }
      size_t open = i + (triple ? 3 : 1);
      for (size_t m = open; m < j && m < n; m++)
        if (k[m] != '\n') k[m] = ' ';
      i = j < n ? j + (triple ? 3 : 1) : n;
    } else {
      i++;
    }
  }
}

static int line_of(const source* src, size_t off) {
  size_t lo = 0, hi = src->num_lines;
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (src->line_at[mid] <= off) lo = mid;
    else hi = mid;
  }
  return (int)lo + 1;
}

/* --- Findings -------------------------------------------------------------- */

static finding* add(scan* s, kind k, const source* src, int line, const char* what) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    finding* f = realloc(s->f, cap * sizeof *f);
    if (f == NULL) {
      fprintf(stderr, "ccshim scan: out of memory after %zu findings\n", s->n);
      exit(2);
    }
    s->f = f;
    s->cap = cap;
  }
  finding* f = &s->f[s->n++];
  memset(f, 0, sizeof *f);
  f->kind = k;
  f->file = src->path;
  f->lang = src->lang;
  f->cython = src->cython;
  f->line = line;
  snprintf(f->what, sizeof f->what, "%s", what);
  return f;
}

static int ident_char(int c) { return isalnum(c) || c == '_'; }

static size_t skip_space(const char* s, size_t i, size_t n) {
  while (i < n && isspace((unsigned char)s[i])) i++;
  return i;
}

static int opener(char ch) { return ch == '(' || ch == '[' || ch == '{'; }
static int closer(char ch) { return ch == ')' || ch == ']' || ch == '}'; }

/* Matches every bracket of the skeleton (any kind closes any kind, as a
 * depth count does); 0, or -1 on no memory. */
static int match_brackets(source* src) {
  size_t n = src->len, count = 0;
  for (size_t i = 0; i < n; i++) count += opener(src->skel[i]);
  src->opens = malloc((count ? count : 1) * sizeof *src->opens);
  src->closes = malloc((count ? count : 1) * sizeof *src->closes);
  uint32_t* stack = malloc((count ? count : 1) * sizeof *stack);
  if (src->opens == NULL || src->closes == NULL || stack == NULL) {
    free(stack);
    return -1;
  }
  size_t k = 0, depth = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = src->skel[i];
    if (opener(ch)) {
      src->opens[k] = (uint32_t)i;
      src->closes[k] = (uint32_t)n;
      stack[depth++] = (uint32_t)k++;
    } else if (closer(ch) && depth > 0) {
      src->closes[stack[--depth]] = (uint32_t)i;
    }
  }
  src->num_opens = k;
  free(stack);
  return 0;
}

/* The offset of the bracket that closes the one at `open`, or len. */
static size_t closing(const source* src, size_t open) {
  size_t lo = 0, hi = src->num_opens;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (src->opens[mid] < open) lo = mid + 1;
    else hi = mid;
  }
  if (lo < src->num_opens && src->opens[lo] == open) return src->closes[lo];
  return src->len;
}

/* The arguments of a call: [begin, end) offsets, trimmed, split at the
 * commas of the outermost level. */
typedef struct args {
  size_t begin[32], end[32];
  int n;
} args;

static void split_args(const source* src, size_t open, size_t close, args* a) {
  a->n = 0;
  size_t start = open + 1;
  for (size_t i = open + 1; i <= close && a->n < 32; i++) {
    char ch = src->skel[i];
    if (i < close && opener(ch)) {
      /* Over a nested bracket in one step: each byte of a file is read at
       * one level only, however deep calls nest. */
      size_t c = closing(src, i);
      if (c >= close) c = close - 1;
      i = c;
    } else if (i == close || ch == ',') {
      size_t b = skip_space(src->skel, start, i), e = i;
      while (e > b && isspace((unsigned char)src->skel[e - 1])) e--;
      if (e > b) {
        a->begin[a->n] = b;
        a->end[a->n] = e;
        a->n++;
      }
      start = i + 1;
    }
  }
}

/* Copies code text [b, e) with runs of blanks made one space; text that
 * does not fit ends in "...". */
static void text_of(const source* src, size_t b, size_t e, char* out, size_t cap) {
  size_t o = 0;
  int space = 0, cut = 0;
  for (size_t i = b; i < e; i++) {
    char ch = src->code[i];
    if (isspace((unsigned char)ch)) {
      space = o > 0;
      continue;
    }
    if (o + (size_t)space + 1 + 4 > cap) { /* keep room for "..." and the NUL */
      cut = 1;
      break;
    }
    if (space) out[o++] = ' ';
    space = 0;
    out[o++] = ch;
  }
  if (cut) {
    memcpy(out + o, "...", 3);
    o += 3;
  }
  out[o] = '\0';
}

/* A keyword argument `key=value`: the value's offsets, or 0. */
static int keyword(const source* src, const args* a, const char* key, size_t* b, size_t* e) {
  size_t kl = strlen(key);
  for (int i = 0; i < a->n; i++) {
    const char* s = src->skel + a->begin[i];
    if (strncmp(s, key, kl) != 0) continue;
    size_t j = skip_space(src->skel, a->begin[i] + kl, a->end[i]);
    if (j < a->end[i] && src->skel[j] == '=' && src->skel[j + 1] != '=') {
      *b = skip_space(src->skel, j + 1, a->end[i]);
      *e = a->end[i];
      return 1;
    }
  }
  return 0;
}

/* Whether argument i is a keyword argument. */
static int is_keyword(const source* src, const args* a, int i) {
  size_t j = a->begin[i];
  while (j < a->end[i] && ident_char((unsigned char)src->skel[j])) j++;
  j = skip_space(src->skel, j, a->end[i]);
  return j > a->begin[i] && j < a->end[i] && src->skel[j] == '=' && src->skel[j + 1] != '=';
}

/* The n-th positional argument, or -1. */
static int positional(const source* src, const args* a, int n) {
  for (int i = 0; i < a->n; i++)
    if (!is_keyword(src, a, i) && n-- == 0) return i;
  return -1;
}

/* The contents of a string literal spanning [b, e) -- with a Python prefix
 * (b"", r'') or an .encode() after it -- or 0 when it is not one. */
static int literal(const source* src, size_t b, size_t e, char* out, size_t cap) {
  const char* c = src->code;
  while (b < e && strchr("bBrRuU", c[b]) && b + 1 < e && c[b + 1] != '(') b++;
  if (b + 1 >= e || (c[b] != '"' && c[b] != '\'')) return 0;
  char q = c[b];
  size_t j = b + 1;
  while (j < e && c[j] != q) j += c[j] == '\\' ? 2 : 1;
  if (j >= e) return 0;
  size_t rest = skip_space(c, j + 1, e);
  if (rest < e && strncmp(c + rest, ".encode(", 8) != 0) return 0;
  size_t len = j - b - 1;
  if (len >= cap) len = cap - 1;
  memcpy(out, c + b + 1, len);
  out[len] = '\0';
  return 1;
}

/* The API version an expression names: an integer, XLA's enum names, or
 * the integer inside ir.IntegerAttr.get(type, N); -1 when computed. */
static int version_of(const source* src, size_t b, size_t e) {
  char t[TEXT_CAP];
  text_of(src, b, e, t, sizeof t);
  if (strstr(t, "STATUS_RETURNING_UNIFIED")) return 3;
  if (strstr(t, "STATUS_RETURNING")) return 2;
  if (strstr(t, "API_VERSION_ORIGINAL")) return 1;
  if (strstr(t, "TYPED_FFI")) return 4;
  if (strstr(t, "API_VERSION_UNSPECIFIED")) return 0;
  const char* num = t;
  if (strstr(t, "IntegerAttr")) {
    const char* comma = strrchr(t, ',');
    if (comma == NULL) return -1;
    num = comma + 1;
  }
  while (*num == ' ') num++;
  if (!isdigit((unsigned char)*num)) return -1;
  char* end;
  long v = strtol(num, &end, 10);
  while (*end == ' ' || *end == ')') end++;
  return *end == '\0' && v >= 0 && v <= 9 ? (int)v : -1;
}

/* The function an expression names: the identifier left once casts, '&',
 * capsule makers and namespaces are peeled off (`reinterpret_cast<void*>(
 * ns::f)`, `<void*>(f)`, `PyCapsule_New(f, ...)` give f), or "". */
static void function_of(const source* src, size_t b, size_t e, char* out, size_t cap) {
  static const char* const peel[] = {"reinterpret_cast", "static_cast", "PyCapsule_New",
                                     "EncapsulateFunction", "void", "const", "char",
                                     "ctypes", "cast", "c_void_p", "nullptr", "NULL", NULL};
  out[0] = '\0';
  for (size_t i = b; i < e;) {
    if (!ident_char((unsigned char)src->skel[i]) || isdigit((unsigned char)src->skel[i])) {
      i++;
      continue;
    }
    size_t j = i;
    while (j < e && ident_char((unsigned char)src->skel[j])) j++;
    int skip = 0;
    for (int p = 0; peel[p]; p++)
      if (j - i == strlen(peel[p]) && !strncmp(src->skel + i, peel[p], j - i)) skip = 1;
    /* Template arguments are passed over: Getrf<float>::Kernel names Kernel,
     * reinterpret_cast<void*>(f) names f. */
    size_t after = skip_space(src->skel, j, e);
    if (after < e && src->skel[after] == '<') {
      int depth = 0;
      size_t m = after;
      for (; m < e; m++) {
        depth += src->skel[m] == '<';
        if (src->skel[m] == '>' && --depth == 0) break;
      }
      if (m < e) after = skip_space(src->skel, m + 1, e);
    }
    /* A namespace or class qualifier, or an object (obj.attr): take what
     * follows.  A call such as mod.kernel() names the kernel maker. */
    int qualifier = after + 1 < e && src->skel[after] == ':' && src->skel[after + 1] == ':';
    /* A call with arguments makes the kernel from them (pycapsule(f));
     * one without names the maker (ext.add_v2()). */
    int call_with_args = after < e && src->skel[after] == '(' &&
                         src->skel[skip_space(src->skel, after + 1, e)] != ')';
    int object = after < e && src->skel[after] == '.';
    if (!skip && !qualifier && !call_with_args && !object && out[0] == '\0') {
      size_t len = j - i < cap ? j - i : cap - 1;
      memcpy(out, src->skel + i, len);
      out[len] = '\0';
    }
    i = after > j ? after : j;
  }
}

/* --- Legacy forms from parameter lists ------------------------------------------ */

typedef enum param { P_OTHER, P_VOIDP, P_VOIDPP, P_CHARP, P_SIZE, P_STATUS, P_STREAM } param;

/* The kind of one parameter: qualifiers, namespaces and its name dropped,
 * [] read as *. */
static param param_kind(const char* text) {
  char words[8][64];
  int nw = 0, stars = 0;
  for (const char* p = text; *p;) {
    if (*p == '*' || (*p == '[' && p[1] == ']')) {
      stars++;
      p += *p == '*' ? 1 : 2;
    } else if (ident_char((unsigned char)*p)) {
      const char* q = p;
      while (ident_char((unsigned char)*q)) q++;
      size_t len = (size_t)(q - p);
      const char* after = q;
      while (*after == ' ') after++;
      if (after[0] == ':' && after[1] == ':') { /* a namespace: se::gpu::GpuStreamHandle */
        p = after + 2;
        continue;
      }
      int drop = (len == 5 && !strncmp(p, "const", 5)) || (len == 8 && !strncmp(p, "volatile", 8)) ||
                 (len == 6 && !strncmp(p, "struct", 6)) ||
                 (len >= 8 && !strncmp(p, "restrict", 8)) ||
                 (len >= 10 && !strncmp(p, "__restrict", 10));
      if (!drop && nw < 8 && len < 64) {
        memcpy(words[nw], p, len);
        words[nw][len] = '\0';
        nw++;
      }
      p = q;
    } else {
      p++;
    }
  }
  /* The last word is the parameter's name when there is a type before it. */
  if (nw >= 2) nw--;
  if (nw == 0) return P_OTHER;
  const char* t = words[0];
  if (nw == 1 && !strcmp(t, "void")) return stars == 1 ? P_VOIDP : stars == 2 ? P_VOIDPP : P_OTHER;
  if (nw == 1 && !strcmp(t, "char") && stars == 1) return P_CHARP;
  if (stars == 0 && ((nw == 1 && (!strcmp(t, "size_t") || !strcmp(t, "uint64_t"))) ||
                     (nw == 2 && !strcmp(t, "unsigned") && !strcmp(words[1], "long"))))
    return P_SIZE;
  if (nw == 1 && stars == 1 && !strncmp(t, "XlaCustomCallStatus", 19)) return P_STATUS;
  if (nw == 1 && stars <= 1) {
    char lower[64];
    size_t k = 0;
    for (; t[k] && k < 63; k++) lower[k] = (char)tolower((unsigned char)t[k]);
    lower[k] = '\0';
    if (strstr(lower, "stream")) return P_STREAM;
  }
  return P_OTHER;
}

static form form_of(const param* p, int n) {
  static const struct {
    form form;
    int n;
    param p[5];
  } forms[] = {
      {CPU_V1, 2, {P_VOIDP, P_VOIDPP}},
      {CPU_V2, 3, {P_VOIDP, P_VOIDPP, P_STATUS}},
      {CPU_V3, 5, {P_VOIDP, P_VOIDPP, P_CHARP, P_SIZE, P_STATUS}},
      {GPU_V1, 4, {P_STREAM, P_VOIDPP, P_CHARP, P_SIZE}},
      {GPU_V23, 5, {P_STREAM, P_VOIDPP, P_CHARP, P_SIZE, P_STATUS}},
  };
  for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
    if (forms[f].n != n) continue;
    int same = 1;
    for (int i = 0; i < n; i++) same &= forms[f].p[i] == p[i];
    if (same) return forms[f].form;
  }
  return FORM_NONE;
}

/* `void NAME(params) {` (C family) or `cdef void NAME(params) [nogil]:`
 * (Cython) at the `void` found at offset i. */
static void definition(scan* s, const source* src, size_t i) {
  const char* k = src->skel;
  size_t n = src->len;
  size_t j = skip_space(k, i + 4, n);
  size_t name_b = j;
  while (j < n && (ident_char((unsigned char)k[j]) || (k[j] == ':' && k[j + 1] == ':') ||
                   (j > name_b && k[j] == ':' && k[j - 1] == ':')))
    j++;
  size_t name_e = j;
  if (name_e == name_b || isdigit((unsigned char)k[name_b])) return;
  j = skip_space(k, j, n);
  if (j >= n || k[j] != '(') return;
  size_t close = closing(src, j);
  if (close >= n) return;
  /* After the parameters: qualifiers, then the body. */
  size_t after = skip_space(k, close + 1, n);
  for (;;) {
    static const char* const quals[] = {"noexcept", "nogil", "except", "*", "with", "gil",
                                        "__attribute__", NULL};
    int moved = 0;
    for (int q = 0; quals[q]; q++) {
      size_t ql = strlen(quals[q]);
      if (!strncmp(k + after, quals[q], ql)) {
        after = skip_space(k, after + ql, n);
        if (!strcmp(quals[q], "__attribute__") && after < n && k[after] == '(')
          after = skip_space(k, closing(src, after) + 1, n);
        moved = 1;
      }
    }
    if (!moved) break;
  }
  int body = src->lang == LANG_C ? after < n && k[after] == '{'
                                 : src->cython && after < n && k[after] == ':';
  if (!body) return;
  args a;
  split_args(src, j, close, &a);
  param p[8];
  int np = a.n > 8 ? 8 : a.n;
  for (int q = 0; q < np; q++) {
    char t[TEXT_CAP];
    text_of(src, a.begin[q], a.end[q], t, sizeof t);
    p[q] = param_kind(t);
  }
  form f = a.n <= 8 ? form_of(p, np) : FORM_NONE;
  if (f == FORM_NONE) return;
  finding* d = add(s, DEFINITION, src, line_of(src, i), "definition");
  char qualified[NAME_CAP];
  text_of(src, name_b, name_e, qualified, sizeof qualified);
  const char* last = strrchr(qualified, ':');
  snprintf(d->function, sizeof d->function, "%s", last ? last + 1 : qualified);
  snprintf(d->name, sizeof d->name, "%s", d->function);
  d->form = f;
  d->platform = PLAT_CPU;
  if (f >= GPU_V1) {
    char stream[TEXT_CAP];
    text_of(src, a.begin[0], a.end[0], stream, sizeof stream);
    d->platform = strstr(stream, "hip") || strstr(src->path, ".hip") ? PLAT_ROCM
                  : strstr(stream, "cuda") || strstr(stream, "CU")   ? PLAT_CUDA
                                                                       : PLAT_GPU;
  }
  d->version = f == CPU_V1 || f == GPU_V1 ? 1 : f == CPU_V2 ? 2 : f == CPU_V3 ? 3 : 0;
  /* C++ mangles names unless extern "C" says otherwise (on the line, or a
   * block earlier in the file: an approximation that errs towards C). */
  const char* ext = strstr(src->path, ".c");
  int cxx = ext && strcmp(ext, ".c") != 0 && strcmp(ext, ".h") != 0;
  if (cxx || strstr(src->path, ".cu") || strstr(src->path, ".hip")) {
    size_t line_b = src->line_at[line_of(src, i) - 1];
    int c_linkage = 0;
    for (size_t x = 0; x < src->num_externs && !c_linkage; x++) {
      size_t m = src->externs[x];
      if (m + 10 > i) break;
      size_t brace = skip_space(src->code, m + 10, n);
      c_linkage = m >= line_b || (brace < n && src->code[brace] == '{' &&
                                  i < closing(src, brace));
    }
    d->cxx_linkage = !c_linkage;
  }
}

/* --- Matchers ----------------------------------------------------------------------- */

/* Reads the platform out of an argument: a literal, or a platform= word. */
static plat platform_arg(const source* src, const args* a, int pos, const char* kw, plat dflt) {
  size_t b, e;
  char t[NAME_CAP];
  int i = pos >= 0 ? positional(src, a, pos) : -1;
  if (kw && keyword(src, a, kw, &b, &e)) {
    if (literal(src, b, e, t, sizeof t)) return plat_parse(t);
    return PLAT_UNKNOWN;
  }
  if (i >= 0) {
    if (literal(src, a->begin[i], a->end[i], t, sizeof t)) return plat_parse(t);
    return PLAT_UNKNOWN;
  }
  return dflt;
}

/* The target name in argument `pos` (or keyword `kw`): a literal into
 * f->name, anything else into f->name_expr. */
static void name_arg(const source* src, const args* a, int pos, const char* kw, finding* f) {
  size_t b = 0, e = 0;
  int i = positional(src, a, pos);
  if (kw && keyword(src, a, kw, &b, &e)) {
    /* by keyword */
  } else if (i >= 0) {
    b = a->begin[i];
    e = a->end[i];
  } else {
    return;
  }
  if (!literal(src, b, e, f->name, sizeof f->name)) {
    f->name[0] = '\0';
    text_of(src, b, e, f->name_expr, sizeof f->name_expr);
  }
}

/* The C family's registration macros and calls. */
static void match_c(scan* s, const source* src, const char* word, size_t at, size_t open,
                    size_t close) {
  args a;
  split_args(src, open, close, &a);
  int line = line_of(src, at);
  int macro = !strncmp(word, "XLA_REGISTER_CUSTOM_CALL_TARGET", 31) ||
              !strncmp(word, "XLA_CPU_REGISTER_CUSTOM_CALL_TARGET", 35);
  if (macro) {
    int with_sym = strstr(word, "_WITH_SYM") != NULL;
    int cpu = !strncmp(word, "XLA_CPU", 7);
    finding* f = add(s, REGISTRATION, src, line, word);
    if (with_sym && a.n >= 1) name_arg(src, &a, 0, NULL, f);
    int fn = with_sym ? 1 : 0;
    if (a.n > fn) {
      function_of(src, a.begin[fn], a.end[fn], f->function, sizeof f->function);
      text_of(src, a.begin[fn], a.end[fn], f->expr, sizeof f->expr);
    }
    if (!with_sym) snprintf(f->name, sizeof f->name, "%s", f->function);
    f->platform = cpu ? PLAT_CPU : platform_arg(src, &a, with_sym ? 2 : 1, NULL, PLAT_UNKNOWN);
    return;
  }
  if (!strcmp(word, "Register")) {
    /* CustomCallTargetRegistry::Global()->Register("name", address, "platform") */
    size_t b = at > 60 ? at - 60 : 0;
    char before[128];
    text_of(src, b, at, before, sizeof before);
    if (!strstr(before, "CustomCallTargetRegistry")) return;
    finding probe;
    memset(&probe, 0, sizeof probe);
    name_arg(src, &a, 0, NULL, &probe);
    if (probe.name[0] == '\0') return; /* the registry's own plumbing */
    finding* f = add(s, REGISTRATION, src, line, "CustomCallTargetRegistry::Register");
    snprintf(f->name, sizeof f->name, "%s", probe.name);
    if (a.n > 1) {
      function_of(src, a.begin[1], a.end[1], f->function, sizeof f->function);
      text_of(src, a.begin[1], a.end[1], f->expr, sizeof f->expr);
    }
    f->platform = platform_arg(src, &a, 2, NULL, PLAT_UNKNOWN);
    return;
  }
  if (!strcmp(word, "EncapsulateFunction")) {
    /* dict["name"] = EncapsulateFunction(kernel), a registrations() dict. */
    size_t b = at;
    while (b > 0 && src->code[b - 1] != ';' && src->code[b - 1] != '{' &&
           src->code[b - 1] != '}')
      b--;
    const char* lb = memchr(src->code + b, '[', at - b);
    if (lb == NULL) return;
    size_t lo = (size_t)(lb - src->code) + 1, hi = lo;
    while (hi < at && src->code[hi] != ']') hi++;
    finding* f = add(s, REGISTRATION, src, line, "EncapsulateFunction");
    literal(src, skip_space(src->code, lo, hi), hi, f->name, sizeof f->name);
    if (a.n > 0) {
      function_of(src, a.begin[0], a.end[0], f->function, sizeof f->function);
      text_of(src, a.begin[0], a.end[0], f->expr, sizeof f->expr);
    }
    return;
  }
  if (!strcmp(word, "CustomCall") || !strcmp(word, "CustomCallWithLayout")) {
    /* XlaBuilder: CustomCall(&b, "name", operands, shape, opaque, ...,
     * api_version); its default is API_VERSION_ORIGINAL.  Only with a
     * literal name: HLO pattern matchers (m::CustomCall) and passes that
     * make calls of computed names are compilers, not users' call sites. */
    finding probe;
    memset(&probe, 0, sizeof probe);
    name_arg(src, &a, 1, NULL, &probe);
    if (probe.name[0] == '\0' || (at >= 3 && !strncmp(src->skel + at - 3, "m::", 3))) return;
    finding* f = add(s, CALL_SITE, src, line, word);
    snprintf(f->name, sizeof f->name, "%s", probe.name);
    if (a.n > 4) text_of(src, a.begin[4], a.end[4], f->opaque, sizeof f->opaque);
    f->version = 1;
    f->version_default = 1;
    for (int i = 0; i < a.n; i++) {
      char t[TEXT_CAP];
      text_of(src, a.begin[i], a.end[i], t, sizeof t);
      if (strstr(t, "API_VERSION_")) {
        f->version = version_of(src, a.begin[i], a.end[i]);
        if (f->version < 0) f->version = 0;
        f->version_default = 0;
      }
    }
    if (f->version == 4) f->kind = TYPED;
    return;
  }
  if (!strncmp(word, "XLA_FFI_DEFINE_HANDLER", 22) || !strcmp(word, "XLA_FFI_REGISTER_HANDLER")) {
    finding* f = add(s, TYPED, src, line, word);
    if (!strcmp(word, "XLA_FFI_REGISTER_HANDLER")) {
      name_arg(src, &a, 1, NULL, f);
      f->platform = platform_arg(src, &a, 2, NULL, PLAT_UNKNOWN);
    } else if (a.n > 0) {
      text_of(src, a.begin[0], a.end[0], f->name, sizeof f->name);
    }
  }
}

/* Python's and Cython's registrations and call sites. */
static void match_py(scan* s, const source* src, const char* word, size_t at, size_t open,
                     size_t close) {
  /* `def custom_call(` defines, not calls. */
  size_t b = at;
  while (b > 0 && (src->skel[b - 1] == ' ' || src->skel[b - 1] == '\t')) b--;
  if (b >= 3 && !strncmp(src->skel + b - 3, "def", 3)) return;
  args a;
  split_args(src, open, close, &a);
  int line = line_of(src, at);
  size_t vb, ve;
  if (!strcmp(word, "register_custom_call_target") ||
      !strcmp(word, "register_cpu_custom_call_target") || !strcmp(word, "register_ffi_target")) {
    int cpu_only = !strcmp(word, "register_cpu_custom_call_target");
    /* xla_client's register_custom_call_target defaults to api_version=0;
     * jax.ffi.register_ffi_target to 1, the typed FFI. */
    int api = !strcmp(word, "register_ffi_target") ? 1 : 0;
    if (keyword(src, &a, "api_version", &vb, &ve)) api = version_of(src, vb, ve);
    if (api < 0) return; /* a wrapper passing its caller's choice on */
    finding* f = add(s, api == 0 ? REGISTRATION : TYPED, src, line, word);
    name_arg(src, &a, 0, "name", f);
    int i = positional(src, &a, 1);
    if (i >= 0) {
      text_of(src, a.begin[i], a.end[i], f->expr, sizeof f->expr);
      function_of(src, a.begin[i], a.end[i], f->function, sizeof f->function);
    } else if (keyword(src, &a, "fn", &vb, &ve)) {
      text_of(src, vb, ve, f->expr, sizeof f->expr);
      function_of(src, vb, ve, f->function, sizeof f->function);
    }
    f->platform = cpu_only ? PLAT_CPU : platform_arg(src, &a, 2, "platform", PLAT_CPU);
    return;
  }
  if (!strcmp(word, "ffi_call")) {
    int api = 4;
    if (keyword(src, &a, "custom_call_api_version", &vb, &ve)) api = version_of(src, vb, ve);
    finding* f = add(s, api == 4 ? TYPED : CALL_SITE, src, line, word);
    f->version = api < 0 ? 0 : api;
    name_arg(src, &a, 0, "target_name", f);
    int i = positional(src, &a, 1);
    if (i >= 0) text_of(src, a.begin[i], a.end[i], f->shapes, sizeof f->shapes);
    else if (keyword(src, &a, "result_shape_dtypes", &vb, &ve))
      text_of(src, vb, ve, f->shapes, sizeof f->shapes);
    if (keyword(src, &a, "legacy_backend_config", &vb, &ve))
      text_of(src, vb, ve, f->opaque, sizeof f->opaque);
    return;
  }
  /* custom_call(name, ..., backend_config=, api_version=): mlir.custom_call
   * and jaxlib's hlo_helpers default to api_version=2; xla_client's
   * CustomCall ops and stablehlo's CustomCallOp to 1. */
  int mlir = !strcmp(word, "custom_call");
  finding* f = add(s, CALL_SITE, src, line, word);
  /* stablehlo.CustomCallOp(results, operands, call_target_name, ...) */
  name_arg(src, &a, mlir ? 0 : !strcmp(word, "CustomCallOp") ? 2 : 1, "call_target_name", f);
  f->version = mlir ? 2 : 1;
  f->version_default = 1;
  if (keyword(src, &a, "api_version", &vb, &ve)) {
    f->version = version_of(src, vb, ve);
    f->version_default = 0;
    if (f->version < 0) f->version = 0; /* computed */
  }
  if (keyword(src, &a, "backend_config", &vb, &ve) || keyword(src, &a, "opaque", &vb, &ve))
    text_of(src, vb, ve, f->opaque, sizeof f->opaque);
  if (f->version == 4) f->kind = TYPED;
}

static const char* const c_words[] = {
    "XLA_REGISTER_CUSTOM_CALL_TARGET", "XLA_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM",
    "XLA_CPU_REGISTER_CUSTOM_CALL_TARGET", "XLA_CPU_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM",
    "Register", "EncapsulateFunction", "CustomCall", "CustomCallWithLayout",
    "XLA_FFI_DEFINE_HANDLER", "XLA_FFI_DEFINE_HANDLER_SYMBOL", "XLA_FFI_DEFINE_HANDLER_AUTO",
    "XLA_FFI_REGISTER_HANDLER", NULL};
static const char* const py_words[] = {
    "register_custom_call_target", "register_cpu_custom_call_target", "register_ffi_target",
    "ffi_call", "custom_call", "CustomCall", "CustomCallWithLayout", "CustomCallWithAliasing",
    "CustomCallOp", NULL};

/* Whether offset `at` lies in a preprocessor directive (a #define's body
 * is no registration), continuation lines included. */
static int in_directive(const source* src, size_t at) {
  int line = line_of(src, at) - 1;
  while (line > 0) {
    size_t end = src->line_at[line] - 1; /* the previous line's newline */
    if (end == 0 || src->code[end - 1] != '\\') break;
    line--;
  }
  size_t b = skip_space(src->code, src->line_at[line], src->len);
  return b < src->len && src->code[b] == '#';
}

static void scan_source(scan* s, source* src) {
  const char* k = src->skel;
  size_t n = src->len;
  const char* const* words = src->lang == LANG_C ? c_words : py_words;
  for (size_t i = 0; i < n;) {
    if (!ident_char((unsigned char)k[i]) || (i > 0 && ident_char((unsigned char)k[i - 1]))) {
      i++;
      continue;
    }
    size_t j = i;
    while (j < n && ident_char((unsigned char)k[j])) j++;
    char word[64];
    size_t len = j - i;
    if (len < sizeof word) {
      memcpy(word, k + i, len);
      word[len] = '\0';
      if (src->lang == LANG_C && in_directive(src, i)) {
        /* macros define, not register */
      } else if (!strcmp(word, "void")) {
        definition(s, src, i);
      } else {
        for (int w = 0; words[w]; w++) {
          if (strcmp(word, words[w]) != 0) continue;
          size_t open = skip_space(k, j, n);
          if (open >= n || k[open] != '(') break;
          size_t close = closing(src, open);
          if (close >= n) break;
          if (src->lang == LANG_C) match_c(s, src, word, i, open, close);
          else match_py(s, src, word, i, open, close);
          break;
        }
      }
    }
    i = j;
  }
}

/* --- Walking the tree ------------------------------------------------------------------ */

static int source_lang(const char* name, lang* l, int* cython) {
  static const char* const c_ext[] = {".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh",
                                      ".hxx", ".cu", ".cuh", ".hip", ".inc", NULL};
  static const char* const py_ext[] = {".py", ".pyx", ".pxd", ".pxi", NULL};
  const char* dot = strrchr(name, '.');
  if (dot == NULL) return 0;
  for (int i = 0; c_ext[i]; i++)
    if (!strcmp(dot, c_ext[i])) {
      *l = LANG_C;
      *cython = 0;
      return 1;
    }
  for (int i = 0; py_ext[i]; i++)
    if (!strcmp(dot, py_ext[i])) {
      *l = LANG_PY;
      *cython = i > 0;
      return 1;
    }
  return 0;
}

static void file_error(scan* s, const char* path, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "ccshim scan: %s: ", path);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  s->errors++;
}

/* Scans the text of one file; takes `code` (len + 1 bytes, from malloc). */
static void scan_text(scan* s, const char* shown, lang l, int cython, char* code, size_t len) {
  source src;
  memset(&src, 0, sizeof src);
  src.path = keep_path(s, shown);
  src.lang = l;
  src.cython = cython;
  src.code = code;
  src.len = len;
  src.code[len] = '\0';
  const char* nul = memchr(code, '\0', len);
  if (nul != NULL) {
    file_error(s, shown, "a binary file (NUL byte at offset %zu), not %s source; not scanned",
               (size_t)(nul - code), l == LANG_C ? "C/C++/CUDA/HIP" : "Python/Cython");
    goto done;
  }
  size_t lines = 1;
  for (size_t i = 0; i < len; i++) lines += code[i] == '\n';
  src.skel = malloc(len + 1);
  src.line_at = malloc(lines * sizeof(size_t));
  if (src.skel == NULL || src.line_at == NULL) {
    file_error(s, shown, "out of memory for %zu bytes", len);
    goto done;
  }
  memcpy(src.skel, code, len + 1);
  src.line_at[0] = 0;
  for (size_t i = 0, ln = 1; i < len; i++)
    if (code[i] == '\n') src.line_at[ln++] = i + 1;
  src.num_lines = lines;
  blank(&src);
  if (len > UINT32_MAX || match_brackets(&src) != 0) {
    file_error(s, shown, "out of memory for %zu bytes", len);
    goto done;
  }
  for (const char* m = src.code; (m = strstr(m, "extern \"C\"")) != NULL; m += 10) {
    src.externs = grow(src.externs, &src.externs_cap, sizeof *src.externs,
                       src.num_externs + 1);
    src.externs[src.num_externs++] = (size_t)(m - src.code);
  }
  scan_source(s, &src);
  s->files++;
  s->lines += lines;
done:
  free(src.code);
  free(src.skel);
  free(src.line_at);
  free(src.opens);
  free(src.closes);
  free(src.externs);
}

/* Opens a path of any length: one open() below PATH_MAX, else component
 * by component with openat(), in pieces that each fit.  Returns an fd or
 * -1 with errno set. */
static int open_any(const char* path, int flags) {
  size_t len = strlen(path);
  if (len < PATH_MAX) return open(path, flags);
  int dir = AT_FDCWD;
  const char* p = path;
  for (;;) {
    size_t rest = strlen(p);
    if (rest < PATH_MAX) {
      int fd = openat(dir, p, flags);
      int e = errno;
      if (dir != AT_FDCWD) close(dir);
      errno = e;
      return fd;
    }
    /* The longest piece that ends at a '/' and fits. */
    size_t cut = PATH_MAX - 1;
    while (cut > 0 && p[cut] != '/') cut--;
    if (cut == 0) {
      if (dir != AT_FDCWD) close(dir);
      errno = ENAMETOOLONG; /* one name longer than PATH_MAX */
      return -1;
    }
    char* piece = strndup(p, cut);
    int next = piece ? openat(dir, piece, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    int e = errno;
    free(piece);
    if (dir != AT_FDCWD) close(dir);
    if (next < 0) {
      errno = e;
      return -1;
    }
    dir = next;
    p += cut;
    while (*p == '/') p++;
  }
}

/* Reads one file.  Only a regular file is read: the open never blocks (a
 * FIFO or a device behind a name or a symbolic link is refused with a
 * line, not waited on). */
static void scan_file(scan* s, const char* path, const char* shown, lang l, int cython) {
  int fd = open_any(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    file_error(s, shown, "cannot read: %s", strerror(errno));
    return;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    file_error(s, shown, "not a regular file (%s); not scanned",
               S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) ? "a character device"
               : S_ISBLK(st.st_mode) ? "a block device" : S_ISSOCK(st.st_mode) ? "a socket"
               : S_ISDIR(st.st_mode) ? "a directory" : "unknown kind");
    close(fd);
    return;
  }
  if (st.st_size > MAX_FILE_BYTES) {
    file_error(s, shown, "larger than %d MiB; not a source file a person wrote, not scanned",
               MAX_FILE_BYTES >> 20);
    close(fd);
    return;
  }
  FILE* fp = fdopen(fd, "rb");
  if (fp == NULL) {
    file_error(s, shown, "cannot read: %s", strerror(errno));
    close(fd);
    return;
  }
  char* code = malloc((size_t)st.st_size + 1);
  if (code == NULL) {
    file_error(s, shown, "out of memory for %lld bytes", (long long)st.st_size);
    fclose(fp);
    return;
  }
  size_t len = fread(code, 1, (size_t)st.st_size, fp);
  int failed = ferror(fp);
  fclose(fp);
  if (failed) {
    file_error(s, shown, "read error");
    free(code);
    return;
  }
  scan_text(s, shown, l, cython, code, len);
}

/* One directory being walked: its entries in name order, and where the
 * walk is in them. */
typedef struct entry {
  char* name;
  unsigned char is_dir, is_file; /* is_file: a regular file or a symbolic link */
} entry;

typedef struct level {
  char* path;  /* as opened */
  char* shown; /* as reported: relative to the scanned directory */
  entry* entries;
  size_t n, next;
} level;

static int by_name(const void* a, const void* b) {
  return strcmp(((const entry*)a)->name, ((const entry*)b)->name);
}

static char* join(const char* a, const char* b) {
  size_t la = strlen(a), lb = strlen(b);
  char* p = malloc(la + lb + 2);
  if (p == NULL) {
    fprintf(stderr, "ccshim scan: out of memory\n");
    exit(2);
  }
  memcpy(p, a, la);
  size_t o = la;
  if (la) p[o++] = '/';
  memcpy(p + o, b, lb + 1);
  return p;
}

/* Lists a directory into `lv`, its entries sorted; 0, or -1 with a line. */
static int list(scan* s, level* lv) {
  int fd = open_any(lv->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd >= 0 ? fdopendir(fd) : NULL;
  if (d == NULL) {
    file_error(s, lv->shown[0] ? lv->shown : lv->path, "cannot list: %s", strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  size_t cap = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    const char* name = e->d_name;
    if (name[0] == '.' || !strcmp(name, "__pycache__")) continue;
    struct stat st;
    if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      char* rel = join(lv->shown, name);
      file_error(s, rel, "cannot stat: %s", strerror(errno));
      free(rel);
      continue;
    }
    lv->entries = grow(lv->entries, &cap, sizeof *lv->entries, lv->n + 1);
    entry* en = &lv->entries[lv->n++];
    en->name = scan_strdup(name);
    en->is_dir = S_ISDIR(st.st_mode);
    en->is_file = !en->is_dir;
  }
  closedir(d);
  if (lv->n) qsort(lv->entries, lv->n, sizeof *lv->entries, by_name);
  return 0;
}

static void level_free(level* lv) {
  for (size_t i = 0; i < lv->n; i++) free(lv->entries[i].name);
  free(lv->entries);
  free(lv->path);
  free(lv->shown);
}

/* Depth first in name order, so that reports are the same on every machine;
 * iterative, so that no depth overflows a stack, and by openat() below
 * PATH_MAX pieces, so that no path is too long.  Hidden directories (.git),
 * __pycache__ and symbolic links to directories are not entered; a file
 * with a source extension that is not a regular file (behind a symbolic
 * link too) gets a line on stderr. */
static void walk(scan* s, const char* dir) {
  level* stack = NULL;
  size_t depth = 0, cap = 0;
  stack = grow(stack, &cap, sizeof *stack, 1);
  memset(&stack[0], 0, sizeof stack[0]);
  stack[0].path = scan_strdup(dir);
  stack[0].shown = scan_strdup("");
  if (list(s, &stack[0]) != 0) {
    level_free(&stack[0]);
    free(stack);
    return;
  }
  depth = 1;
  while (depth > 0) {
    level* top = &stack[depth - 1];
    if (top->next == top->n) {
      level_free(top);
      depth--;
      continue;
    }
    const entry* en = &top->entries[top->next++];
    char* path = join(top->path, en->name);
    char* rel = join(top->shown, en->name);
    lang l;
    int cython;
    if (en->is_dir) {
      stack = grow(stack, &cap, sizeof *stack, depth + 1);
      level* lv = &stack[depth];
      memset(lv, 0, sizeof *lv);
      lv->path = path;
      lv->shown = rel;
      if (list(s, lv) == 0) depth++;
      else level_free(lv);
      continue;
    }
    if (en->is_file && source_lang(en->name, &l, &cython)) scan_file(s, path, rel, l, cython);
    free(path);
    free(rel);
  }
  free(stack);
}

/* --- Targets ------------------------------------------------------------------------------ */

typedef struct target {
  char name[TEXT_CAP];     /* or, when computed, the expression */
  int computed;
  const finding* def;      /* the definition, if found */
  const finding* reg[8];   /* registrations, up to 8 shown */
  int num_reg;
  const finding* call[8];  /* call sites, up to 8 shown */
  int num_call;
  plat platform;
  form form;               /* of the definition, as resolved */
  int version;
  char* how;               /* how the version is known (owned) */
  char note[TEXT_CAP];     /* a conflict, or what is missing */
} target;

typedef struct inventory {
  target* t;
  size_t n, cap;
} inventory;

/* The target of that name; a computed name is a target of its own. */
static target* target_named(inventory* inv, const char* name, int computed) {
  for (size_t i = 0; i < inv->n && !computed; i++)
    if (!inv->t[i].computed && !strcmp(inv->t[i].name, name)) return &inv->t[i];
  if (inv->n == inv->cap) {
    inv->cap = inv->cap ? 2 * inv->cap : 32;
    inv->t = realloc(inv->t, inv->cap * sizeof *inv->t);
    if (inv->t == NULL) {
      fprintf(stderr, "ccshim scan: out of memory for %zu targets\n", inv->n);
      exit(2);
    }
  }
  target* t = &inv->t[inv->n++];
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->computed = computed;
  return t;
}

static const finding* definition_of(const scan* s, const char* function) {
  if (function[0] == '\0') return NULL;
  for (size_t i = 0; i < s->n; i++)
    if (s->f[i].kind == DEFINITION && !strcmp(s->f[i].function, function)) return &s->f[i];
  return NULL;
}

/* Appends to a note; a note that does not fit ends in "..." (said, not
 * silently cut). */
static void appendf(char* buf, size_t cap, const char* fmt, ...) {
  size_t len = strlen(buf);
  if (len + 4 >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + len, cap - len, fmt, ap);
  va_end(ap);
  if (n >= 0 && (size_t)n >= cap - len) memcpy(buf + cap - 4, "...", 4);
}

static void set_how(target* t, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_how(target* t, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  free(t->how);
  if (vasprintf(&t->how, fmt, ap) < 0) {
    fprintf(stderr, "ccshim scan: out of memory\n");
    exit(2);
  }
  va_end(ap);
}

/* Decides a target's platform and version from what was found, and says how. */
static void resolve(target* t) {
  const finding* explicit_call = NULL;
  const finding* default_call = NULL;
  for (int i = 0; i < t->num_call; i++) {
    if (!t->call[i]->version_default && t->call[i]->version && !explicit_call)
      explicit_call = t->call[i];
    if (t->call[i]->version_default && !default_call) default_call = t->call[i];
  }
  const finding* d = t->def;
  int gpu_registration = 0;
  for (int i = 0; i < t->num_reg; i++) {
    if (t->platform == PLAT_UNKNOWN) t->platform = t->reg[i]->platform;
    gpu_registration |= is_gpu(t->reg[i]->platform);
  }
  /* (void*, void**, const char*, size_t, status*) is the CPU v3 form, and
   * also the GPU v2/v3 form with the stream taken as void*: a GPU
   * registration, or a call site saying 2, tells which. */
  t->form = d ? d->form : FORM_NONE;
  plat def_platform = d ? d->platform : PLAT_UNKNOWN;
  int void_stream = t->form == CPU_V3 &&
                    (gpu_registration || (explicit_call && explicit_call->version == 2));
  if (void_stream) {
    t->form = GPU_V23;
    def_platform = PLAT_GPU;
  }
  if (t->platform == PLAT_UNKNOWN) t->platform = def_platform;
  int def_version = t->form == CPU_V1 || t->form == GPU_V1 ? 1
                    : t->form == CPU_V2                    ? 2
                    : t->form == CPU_V3                    ? 3
                                                           : 0;
  if (explicit_call) {
    t->version = explicit_call->version;
    set_how(t, "api_version=%d at the call site %s:%d", t->version,
             explicit_call->file, explicit_call->line);
  } else if (def_version) {
    t->version = def_version;
    set_how(t, "the definition's parameters (%s)", form_text(t->form));
  } else if (default_call) {
    t->version = default_call->version;
    set_how(t, "the default of %s at %s:%d (no api_version given)",
             default_call->what, default_call->file, default_call->line);
  } else if (t->form == GPU_V23) {
    t->version = 2;
    set_how(t,
             "the definition's parameters (GPU v2/v3: the same on GPU; no call site says which)");
  } else {
    set_how(t, "unknown: no definition or call site found");
  }
  if (void_stream) {
    char* base = t->how;
    t->how = NULL;
    set_how(t, "%s; its first parameter, a void*, is the GPU stream", base);
    free(base);
  }
  /* Conflicts worth a person's look. */
  if (d && t->version) {
    int fits = t->form == GPU_V23 ? t->version >= 2 : def_version == t->version;
    if (!fits)
      appendf(t->note, sizeof t->note,
              "the call says version %d but %s:%d has %s parameters; XLA would pass the "
              "wrong arguments. ",
              t->version, d->file, d->line, form_text(t->form));
    if (t->platform != PLAT_UNKNOWN && is_gpu(t->platform) != is_gpu(def_platform))
      appendf(t->note, sizeof t->note,
              "registered for %s but %s:%d has %s parameters. ", plat_text(t->platform),
              d->file, d->line, form_text(t->form));
  }
  if (t->computed)
    appendf(t->note, sizeof t->note,
            "the name is computed at run time, so no definition or call site is matched "
            "to it. ");
  else if (t->num_reg == 0 && t->num_call == 0)
    appendf(t->note, sizeof t->note,
            "a function with legacy parameters, but no registration or call site found; "
            "perhaps not a custom call. ");
  else if (t->num_reg == 0)
    appendf(t->note, sizeof t->note, "no registration found in the tree. ");
  if (d && d->cxx_linkage)
    appendf(t->note, sizeof t->note,
            "C++ linkage: give it extern \"C\" to load it by name, or pass its capsule. ");
  size_t len = strlen(t->note);
  if (len && t->note[len - 1] == ' ') t->note[len - 1] = '\0';
}

static void build(const scan* s, inventory* inv) {
  for (size_t i = 0; i < s->n; i++) {
    const finding* f = &s->f[i];
    if (f->kind != REGISTRATION) continue;
    target* t = f->name[0] || !f->name_expr[0] ? target_named(inv, f->name[0] ? f->name : f->function, 0)
                                               : target_named(inv, f->name_expr, 1);
    if (t->num_reg < 8) t->reg[t->num_reg++] = f;
    if (!t->def) t->def = definition_of(s, f->function);
  }
  for (size_t i = 0; i < s->n; i++) {
    const finding* f = &s->f[i];
    if (f->kind != CALL_SITE) continue;
    target* t = f->name[0] || !f->name_expr[0] ? target_named(inv, f->name, 0)
                                               : target_named(inv, f->name_expr, 1);
    if (t->num_call < 8) t->call[t->num_call++] = f;
  }
  /* Definitions not reached through a registration: a target by the
   * function's name (legacy code registers most kernels under it). */
  for (size_t i = 0; i < s->n; i++) {
    const finding* f = &s->f[i];
    if (f->kind != DEFINITION) continue;
    int linked = 0;
    for (size_t k = 0; k < inv->n && !linked; k++) linked = inv->t[k].def == f;
    if (linked) continue;
    target* t = target_named(inv, f->function, 0);
    if (!t->def) t->def = f;
  }
  for (size_t i = 0; i < inv->n; i++) resolve(&inv->t[i]);
}

/* --- What to do ------------------------------------------------------------------------------ */

/* The name as code: a literal, or the expression that computes it. */
static void name_code(const target* t, char* out, size_t cap) {
  snprintf(out, cap, t->computed ? "%s" : "\"%s\"", t->name);
}

/* The kernel's function name, or "". */
static const char* function_name(const target* t) {
  if (t->def) return t->def->function;
  /* A C registration names a function; a Python one, an object. */
  for (int i = 0; i < t->num_reg; i++)
    if (t->reg[i]->function[0] && (t->reg[i]->lang == LANG_C || !t->computed))
      return t->reg[i]->function;
  return t->computed ? "" : t->name;
}

/* A registration of the target in the given language, or NULL. */
static const finding* registration_in(const target* t, lang l) {
  for (int i = 0; i < t->num_reg; i++)
    if (t->reg[i]->lang == l && t->reg[i]->expr[0]) return t->reg[i];
  return NULL;
}

/* The Python line: the kernel as the Python registration had it (a Cython
 * pointer as its address), else from a C extension's registrations() dict,
 * else by symbol from the library. */
static void wrap_line(const target* t, char* out, size_t cap) {
  const finding* py = registration_in(t, LANG_PY);
  const finding* c = registration_in(t, LANG_C);
  char name[TEXT_CAP + 2], kernel[TEXT_CAP + 64], version[16];
  name_code(t, name, sizeof name);
  const char* fn = function_name(t);
  if (py && py->cython && py->expr[0] == '<')
    snprintf(kernel, sizeof kernel, "<uintptr_t>%s", py->expr);
  else if (py)
    snprintf(kernel, sizeof kernel, "%s", py->expr);
  else if (c && !strcmp(c->what, "EncapsulateFunction"))
    snprintf(kernel, sizeof kernel, "<extension>.registrations()[%s]", name);
  else if (fn[0])
    snprintf(kernel, sizeof kernel, "(\"<your library>.so\", \"%s\")", fn);
  else
    snprintf(kernel, sizeof kernel, "<the kernel>");
  snprintf(version, sizeof version, "%d", t->version);
  snprintf(out, cap, "ccshim.jax.register_legacy(%s, %s, platform=\"%s\", api_version=%s)",
           name, kernel, t->platform == PLAT_UNKNOWN ? "cpu" : plat_text(t->platform),
           t->version ? version : "<1, 2 or 3>");
}

/* The C line: the function as the C registration named it. */
static void wrap_line_c(const target* t, char* out, size_t cap) {
  const finding* c = registration_in(t, LANG_C);
  const char* fn = function_name(t);
  /* As the registration wrote it (Getrf<float>::Kernel), unless a cast to
   * void* is part of that. */
  if (c && !strstr(c->expr, "_cast<") && !strstr(c->expr, "(void")) fn = c->expr;
  char version[16];
  snprintf(version, sizeof version, "%d", t->version);
  snprintf(out, cap, "ccshim_wrap((ccshim_legacy_fn)%s, %s, %s, NULL, NULL, &adapter)",
           fn[0] ? fn : "<the kernel>", t->version ? version : "<1, 2 or 3>",
           t->platform == PLAT_ROCM ? "CCSHIM_PLATFORM_ROCM"
           : is_gpu(t->platform)    ? "CCSHIM_PLATFORM_CUDA"
                                    : "CCSHIM_PLATFORM_HOST");
}

static void call_change(const target* t, char* out, size_t cap) {
  const finding* c = t->num_call ? t->call[0] : NULL;
  char opaque[TEXT_CAP + 16] = "", name[TEXT_CAP + 2];
  name_code(t, name, sizeof name);
  if (c && c->opaque[0] && strcmp(c->opaque, "\"\"") != 0 && strcmp(c->opaque, "b\"\"") != 0)
    snprintf(opaque, sizeof opaque, ", opaque=%s", c->opaque);
  snprintf(out, cap, "ccshim.jax.legacy_call(%s, %s%s)(*operands)", name,
           c && c->shapes[0] ? c->shapes : "result_shape_dtypes", opaque);
}

/* --- Output ---------------------------------------------------------------------------------- */

static void json_str(const char* s) { ccshim_tool_json_string(stdout, s); }

static void json_site(const finding* f) {
  printf("{\"file\": ");
  json_str(f->file);
  printf(", \"line\": %d, \"via\": ", f->line);
  json_str(f->what);
  if (f->kind == CALL_SITE) {
    printf(", \"api_version\": %d, \"api_version_is_default\": %s", f->version,
           f->version_default ? "true" : "false");
    if (f->opaque[0]) {
      printf(", \"backend_config\": ");
      json_str(f->opaque);
    }
  } else if (f->function[0]) {
    printf(", \"function\": ");
    json_str(f->function);
  }
  putchar('}');
}

static const finding* anchor(const target* t) {
  return t->num_reg ? t->reg[0] : t->def ? t->def : t->call[0];
}

static void print_json(const scan* s, const inventory* inv) {
  size_t typed = 0;
  for (size_t i = 0; i < s->n; i++) typed += s->f[i].kind == TYPED;
  printf("{\n  \"targets\": [");
  for (size_t i = 0; i < inv->n; i++) {
    const target* t = &inv->t[i];
    char w[LINE_CAP], wc[LINE_CAP], cc[LINE_CAP];
    wrap_line(t, w, sizeof w);
    wrap_line_c(t, wc, sizeof wc);
    call_change(t, cc, sizeof cc);
    const finding* a = anchor(t);
    printf("%s\n    {\"name\": ", i ? "," : "");
    json_str(t->name);
    printf(", \"platform\": \"%s\", \"api_version\": %d, \"api_version_from\": ",
           plat_text(t->platform), t->version);
    json_str(t->how ? t->how : "");
    printf(", \"file\": ");
    json_str(a->file);
    printf(", \"line\": %d,\n     \"definition\": ", a->line);
    if (t->def) {
      json_site(t->def);
      printf(", \"form\": \"%s\"", form_text(t->form));
    } else {
      printf("null");
    }
    printf(",\n     \"registrations\": [");
    for (int k = 0; k < t->num_reg; k++) {
      printf("%s", k ? ", " : "");
      json_site(t->reg[k]);
    }
    printf("],\n     \"call_sites\": [");
    for (int k = 0; k < t->num_call; k++) {
      printf("%s", k ? ", " : "");
      json_site(t->call[k]);
    }
    printf("],\n     \"wrap\": ");
    json_str(w);
    printf(", \"wrap_c\": ");
    json_str(wc);
    printf(",\n     \"call_site_change\": ");
    json_str(t->num_call ? cc : "");
    printf(", \"note\": ");
    json_str(t->note);
    printf("}");
  }
  printf("\n  ],\n  \"typed\": [");
  int first = 1;
  for (size_t i = 0; i < s->n; i++) {
    if (s->f[i].kind != TYPED) continue;
    printf("%s\n    {\"name\": ", first ? "" : ",");
    json_str(s->f[i].name);
    printf(", \"file\": ");
    json_str(s->f[i].file);
    printf(", \"line\": %d, \"via\": ", s->f[i].line);
    json_str(s->f[i].what);
    printf("}");
    first = 0;
  }
  printf("\n  ],\n  \"summary\": {\"files\": %zu, \"lines\": %zu, \"legacy_targets\": %zu, "
         "\"typed\": %zu, \"unscanned_files\": %zu}\n}\n",
         s->files, s->lines, inv->n, typed, s->errors);
}

static void print_text(const scan* s, const inventory* inv) {
  size_t typed = 0, by_form[5][4] = {{0}}, unknown = 0, notes = 0, calls = 0;
  for (size_t i = 0; i < s->n; i++) typed += s->f[i].kind == TYPED;
  for (size_t i = 0; i < inv->n; i++) {
    const target* t = &inv->t[i];
    const finding* a = anchor(t);
    char w[LINE_CAP], wc[LINE_CAP], cc[LINE_CAP];
    wrap_line(t, w, sizeof w);
    wrap_line_c(t, wc, sizeof wc);
    call_change(t, cc, sizeof cc);
    char version[8] = "v?";
    if (t->version) snprintf(version, sizeof version, "v%d", t->version);
    printf("%s%s  %s %s  %s:%d\n", t->name, t->computed ? " (name computed)" : "",
           plat_text(t->platform), version, a->file, a->line);
    printf("    version    %s\n", t->how ? t->how : "");
    if (t->def)
      printf("    defined    %s:%d (%s parameters)\n", t->def->file, t->def->line,
             form_text(t->form));
    for (int k = 0; k < t->num_reg; k++)
      printf("    registered %s:%d %s\n", t->reg[k]->file, t->reg[k]->line, t->reg[k]->what);
    for (int k = 0; k < t->num_call; k++)
      if (t->call[k]->version)
      printf("    called     %s:%d %s(api_version=%d%s)\n", t->call[k]->file,
             t->call[k]->line, t->call[k]->what, t->call[k]->version,
             t->call[k]->version_default ? ", the default" : "");
    else
      printf("    called     %s:%d %s(api_version computed)\n", t->call[k]->file,
             t->call[k]->line, t->call[k]->what);
    printf("    wrap       %s\n", w);
    printf("    wrap (C)   %s\n", wc);
    if (t->num_call) printf("    call site  %s\n", cc);
    if (t->note[0]) printf("    note       %s\n", t->note);
    printf("\n");
    if (t->platform != PLAT_UNKNOWN && t->version >= 1 && t->version <= 3)
      by_form[t->platform][t->version]++;
    else
      unknown++;
    notes += t->note[0] != '\0';
    calls += (size_t)t->num_call;
  }
  printf("%zu legacy target%s in %zu files (%zu lines):", inv->n, inv->n == 1 ? "" : "s",
         s->files, s->lines);
  for (int p = PLAT_CPU; p <= PLAT_GPU; p++)
    for (int v = 1; v <= 3; v++)
      if (by_form[p][v]) printf(" %s v%d: %zu;", plat_text((plat)p), v, by_form[p][v]);
  if (unknown) printf(" form unknown: %zu;", unknown);
  printf(" %zu legacy call site%s; %zu typed-FFI handler%s or call%s already; %zu with notes\n",
         calls, calls == 1 ? "" : "s", typed, typed == 1 ? "" : "s", typed == 1 ? "" : "s",
         notes);
}

/* Joins the findings, prints the inventory, frees; the exit status. */
static int finish(scan* s) {
  inventory inv;
  memset(&inv, 0, sizeof inv);
  build(s, &inv);
  if (s->json) print_json(s, &inv);
  else print_text(s, &inv);
  for (size_t i = 0; i < inv.n; i++) free(inv.t[i].how);
  free(inv.t);
  free(s->f);
  for (size_t i = 0; i < s->num_paths; i++) free(s->paths[i]);
  free(s->paths);
  return s->errors ? 1 : 0;
}

int ccshim_scan_main(int argc, char** argv) {
  const char* dir = NULL;
  scan s;
  memset(&s, 0, sizeof s);
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: ccshim scan DIR|FILE [--json]\n\n"
             "Lists the legacy custom-call targets of a source tree (C, C++, CUDA, HIP,\n"
             "Python, Cython): registrations, call sites and kernel definitions joined\n"
             "per target, with platform, API version (and how it is known), file:line,\n"
             "the line that wraps it with ccshim and the call-site change.\n"
             "Exit status: 0; 1 when a file could not be scanned (one line each on\n"
             "stderr, after the inventory); 2 when DIR is wrong.\n\n"
             "examples:\n"
             "  ccshim scan path/to/project\n"
             "  ccshim scan path/to/project --json > inventory.json\n");
      return 0;
    }
    if (!strcmp(argv[i], "--json")) {
      s.json = 1;
    } else if (argv[i][0] == '-' && argv[i][1] == '-') {
      fprintf(stderr, "ccshim scan: unknown option %s (expected DIR [--json])\n", argv[i]);
      return 2;
    } else if (dir) {
      fprintf(stderr, "ccshim scan: one directory expected, got '%s' and '%s'\n", dir, argv[i]);
      return 2;
    } else {
      dir = argv[i];
    }
  }
  if (dir == NULL) {
    fprintf(stderr, "ccshim scan: expected a directory: ccshim scan DIR [--json]\n");
    return 2;
  }
  struct stat st;
  if (stat(dir, &st) != 0) {
    fprintf(stderr, "ccshim scan: %s: %s\n", dir, strerror(errno));
    return 2;
  }
  lang l;
  int cython;
  if (S_ISDIR(st.st_mode)) {
    walk(&s, dir);
  } else if (source_lang(dir, &l, &cython)) {
    scan_file(&s, dir, dir, l, cython);
  } else {
    fprintf(stderr,
            "ccshim scan: %s: neither a directory nor a C, C++, CUDA, HIP, Python or Cython "
            "source file\n", dir);
    return 2;
  }
  return finish(&s);
}

int ccshim_scan_buffer(const char* name, const char* data, size_t len, int json) {
  scan s;
  memset(&s, 0, sizeof s);
  s.json = json;
  lang l = LANG_C;
  int cython = 0;
  source_lang(name, &l, &cython);
  char* code = malloc(len + 1);
  if (code == NULL) return 2;
  memcpy(code, data, len);
  scan_text(&s, name, l, cython, code, len);
  return finish(&s);
}
