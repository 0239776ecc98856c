/*
 * A source file read twice over (comments blanked; strings blanked too),
 * its brackets matched once, a call's arguments split, literals and names
 * read from them; and the scan's own memory helpers.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "scan.h"

/* Exits on no memory: a scan that silently left things out would mislead. */
void* scan_grow(void* p, size_t* cap, size_t elem, size_t want) {
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

char* scan_strdup(const char* text) {
  char* d = strdup(text);
  if (d == NULL) {
    fprintf(stderr, "ccshim scan: out of memory\n");
    exit(2);
  }
  return d;
}

/* A copy of a file's name that lives as long as the scan. */
const char* scan_keep_path(scan* s, const char* path) {
  s->paths = scan_grow(s->paths, &s->paths_cap, sizeof *s->paths, s->num_paths + 1);
  return s->paths[s->num_paths++] = scan_strdup(path);
}

const char* scan_plat_text(plat p) {
  static const char* const text[] = {"unknown", "cpu", "cuda", "rocm", "gpu", "sycl"};
  return text[p];
}

/* XLA's platform names and JAX's, any case. */
plat scan_plat_parse(const char* s) {
  if (!strcasecmp(s, "Host") || !strcasecmp(s, "cpu")) return PLAT_CPU;
  if (!strcasecmp(s, "CUDA")) return PLAT_CUDA;
  if (!strcasecmp(s, "ROCM")) return PLAT_ROCM;
  if (!strcasecmp(s, "gpu")) return PLAT_GPU;
  if (!strcasecmp(s, "SYCL") || !strcasecmp(s, "xpu")) return PLAT_SYCL;
  return PLAT_UNKNOWN;
}

/* --- A source file, twice over ------------------------------------------------ */

/* Blanks C's comments in `code` and, in `skel`, string contents too.
 * Newlines stay, so offsets and line numbers agree with the file. */
void scan_blank(source* src) {
  char* c = src->code;
  char* k = src->skel;
  size_t n = src->len;
  for (size_t i = 0; i < n;) {
    if (c[i] == '/' && i + 1 < n && c[i + 1] == '/') {
      for (; i < n && c[i] != '\n'; i++) c[i] = k[i] = ' ';
    } else if (c[i] == '/' && i + 1 < n && c[i + 1] == '*') {
      size_t j = i + 2;
      while (j + 1 < n && !(c[j] == '*' && c[j + 1] == '/')) j++;
      j = j + 1 < n ? j + 2 : n;
      for (; i < j; i++)
        if (c[i] != '\n') c[i] = k[i] = ' ';
    } else if (c[i] == '"' || c[i] == '\'') {
      char q = c[i];
      /* '...' is a character literal: keep it short, so that a digit
       * separator (1'000) cannot swallow the file. */
      size_t j = i + 1;
      for (; j < n; j++) {
        if (c[j] == '\\') {
          j++;
          continue;
        }
        if (c[j] == '\n') break; /* unterminated: stop at the line */
        if (c[j] == q) break;
        if (q == '\'' && j > i + 4) break;
      }
      for (size_t m = i + 1; m < j && m < n; m++)
        if (k[m] != '\n') k[m] = ' ';
      i = j < n ? j + 1 : n;
    } else {
      i++;
    }
  }
}

int scan_line_of(const source* src, size_t off) {
  size_t lo = 0, hi = src->num_lines;
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (src->line_at[mid] <= off)
      lo = mid;
    else
      hi = mid;
  }
  return (int)lo + 1;
}

/* --- Findings -------------------------------------------------------------- */

finding* scan_add(scan* s, kind k, const source* src, int line, const char* what) {
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
  f->line = line;
  snprintf(f->what, sizeof f->what, "%s", what);
  return f;
}

int scan_ident_char(int c) { return isalnum(c) || c == '_'; }

size_t scan_skip_space(const char* s, size_t i, size_t n) {
  while (i < n && isspace((unsigned char)s[i])) i++;
  return i;
}

static int opener(char ch) { return ch == '(' || ch == '[' || ch == '{'; }
static int closer(char ch) { return ch == ')' || ch == ']' || ch == '}'; }

/* Matches every bracket of the skeleton (any kind closes any kind, as a
 * depth count does); 0, or -1 on no memory. */
int scan_match_brackets(source* src) {
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
size_t scan_closing(const source* src, size_t open) {
  size_t lo = 0, hi = src->num_opens;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (src->opens[mid] < open)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < src->num_opens && src->opens[lo] == open) return src->closes[lo];
  return src->len;
}

void scan_split_args(const source* src, size_t open, size_t close, args* a) {
  a->n = 0;
  size_t start = open + 1;
  for (size_t i = open + 1; i <= close && a->n < 32; i++) {
    char ch = src->skel[i];
    if (i < close && opener(ch)) {
      /* Over a nested bracket in one step: each byte of a file is read at
       * one level only, however deep calls nest. */
      size_t c = scan_closing(src, i);
      if (c >= close) c = close - 1;
      i = c;
    } else if (i == close || ch == ',') {
      size_t b = scan_skip_space(src->skel, start, i), e = i;
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
void scan_text_of(const source* src, size_t b, size_t e, char* out, size_t cap) {
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
int scan_keyword(const source* src, const args* a, const char* key, size_t* b, size_t* e) {
  size_t kl = strlen(key);
  for (int i = 0; i < a->n; i++) {
    const char* s = src->skel + a->begin[i];
    if (strncmp(s, key, kl) != 0) continue;
    size_t j = scan_skip_space(src->skel, a->begin[i] + kl, a->end[i]);
    if (j < a->end[i] && src->skel[j] == '=' && src->skel[j + 1] != '=') {
      *b = scan_skip_space(src->skel, j + 1, a->end[i]);
      *e = a->end[i];
      return 1;
    }
  }
  return 0;
}

/* Whether argument i is a keyword argument. */
static int is_keyword(const source* src, const args* a, int i) {
  size_t j = a->begin[i];
  while (j < a->end[i] && scan_ident_char((unsigned char)src->skel[j])) j++;
  j = scan_skip_space(src->skel, j, a->end[i]);
  return j > a->begin[i] && j < a->end[i] && src->skel[j] == '=' && src->skel[j + 1] != '=';
}

/* The n-th positional argument, or -1. */
int scan_positional(const source* src, const args* a, int n) {
  for (int i = 0; i < a->n; i++)
    if (!is_keyword(src, a, i) && n-- == 0) return i;
  return -1;
}

/* The contents of a string literal spanning [b, e) -- with a Python prefix
 * (b"", r'') or an .encode() after it -- or 0 when it is not one. */
int scan_literal(const source* src, size_t b, size_t e, char* out, size_t cap) {
  const char* c = src->code;
  while (b < e && strchr("bBrRuU", c[b]) && b + 1 < e && c[b + 1] != '(') b++;
  if (b + 1 >= e || (c[b] != '"' && c[b] != '\'')) return 0;
  char q = c[b];
  size_t j = b + 1;
  while (j < e && c[j] != q) j += c[j] == '\\' ? 2 : 1;
  if (j >= e) return 0;
  size_t rest = scan_skip_space(c, j + 1, e);
  if (rest < e && strncmp(c + rest, ".encode(", 8) != 0) return 0;
  size_t len = j - b - 1;
  if (len >= cap) len = cap - 1;
  memcpy(out, c + b + 1, len);
  out[len] = '\0';
  return 1;
}

/* The API version an expression names: an integer, XLA's enum names, or
 * the integer inside ir.IntegerAttr.get(type, N); -1 when computed. */
int scan_version_of(const source* src, size_t b, size_t e) {
  char t[TEXT_CAP];
  scan_text_of(src, b, e, t, sizeof t);
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
void scan_function_of(const source* src, size_t b, size_t e, char* out, size_t cap) {
  static const char* const peel[] = {"reinterpret_cast",
                                     "static_cast",
                                     "PyCapsule_New",
                                     "EncapsulateFunction",
                                     "encapsulate_function",
                                     "void",
                                     "const",
                                     "char",
                                     "ctypes",
                                     "cast",
                                     "c_void_p",
                                     "nullptr",
                                     "NULL",
                                     NULL};
  out[0] = '\0';
  for (size_t i = b; i < e;) {
    if (!scan_ident_char((unsigned char)src->skel[i]) || isdigit((unsigned char)src->skel[i])) {
      i++;
      continue;
    }
    size_t j = i;
    while (j < e && scan_ident_char((unsigned char)src->skel[j])) j++;
    int skip = 0;
    for (int p = 0; peel[p]; p++)
      if (j - i == strlen(peel[p]) && !strncmp(src->skel + i, peel[p], j - i)) skip = 1;
    /* Template arguments are passed over: Getrf<float>::Kernel names Kernel,
     * reinterpret_cast<void*>(f) names f. */
    size_t after = scan_skip_space(src->skel, j, e);
    if (after < e && src->skel[after] == '<') {
      int depth = 0;
      size_t m = after;
      for (; m < e; m++) {
        depth += src->skel[m] == '<';
        if (src->skel[m] == '>' && --depth == 0) break;
      }
      if (m < e) after = scan_skip_space(src->skel, m + 1, e);
    }
    /* A namespace or class qualifier, or an object (obj.attr): take what
     * follows.  A call such as mod.kernel() names the kernel maker. */
    int qualifier = after + 1 < e && src->skel[after] == ':' && src->skel[after + 1] == ':';
    /* A call with arguments makes the kernel from them (pycapsule(f));
     * one without names the maker (ext.add_v2()). */
    int call_with_args = after < e && src->skel[after] == '(' &&
                         src->skel[scan_skip_space(src->skel, after + 1, e)] != ')';
    int object = after < e && src->skel[after] == '.';
    if (!skip && !qualifier && !call_with_args && !object && out[0] == '\0') {
      size_t len = j - i < cap ? j - i : cap - 1;
      memcpy(out, src->skel + i, len);
      out[len] = '\0';
    }
    i = after > j ? after : j;
  }
}

/* The scope of a qualified name as written ("Getrf<T>::Kernel" ->
 * "Getrf", "a::b::f" -> "b", "f" -> ""): the component before the last,
 * template arguments dropped, so that a definition and a registration
 * that instantiates it name the same scope. */
void scan_scope_of(const char* qualified, char* out, size_t cap) {
  out[0] = '\0';
  const char* last = NULL;
  for (const char* p = qualified; (p = strstr(p, "::")) != NULL; p += 2) last = p;
  if (last == NULL) return;
  const char* end = last;
  while (end > qualified && (end[-1] == ' ' || end[-1] == '\t')) end--;
  if (end > qualified && end[-1] == '>') { /* drop <...> */
    int depth = 0;
    while (end > qualified) {
      end--;
      if (*end == '>') depth++;
      if (*end == '<' && --depth == 0) break;
    }
  }
  const char* begin = end;
  while (begin > qualified && scan_ident_char((unsigned char)begin[-1])) begin--;
  size_t len = (size_t)(end - begin) < cap ? (size_t)(end - begin) : cap - 1;
  memcpy(out, begin, len);
  out[len] = '\0';
}
