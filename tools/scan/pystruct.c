/*
 * The shapes of Python and Cython that registrations take in real projects,
 * beyond one call with a literal name:
 *
 *   - a Cython helper that makes a capsule and puts it in the module's dict
 *     (mpi4jax: `cdef declare_custom_call_target(fn_name, void* fn)`, whose
 *     body does `custom_call_targets[fn_name] = PyCapsule_New(fn, ...)`),
 *     and the calls of it that name each kernel;
 *   - a Python loop that registers a module's mapping
 *     (`for name, fn in mod.custom_call_targets.items():`, or over
 *     `ext.registrations().items()`), the platform given in the loop;
 *   - a registration inside a function whose name is one of the function's
 *     parameters (`def _build_op(name, spec): register(name, ...)`), named
 *     by the literal each call of that function passes (celerite2);
 *   - a kernel taken from a module by a computed attribute
 *     (`getattr(xla_ops, spec["name"])()`), joined in targets.c.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "scan.h"

/* A file's module name, as Python imports it: the file name up to its
 * first dot (mpi_xla_bridge_cpu.pyx, xla_ops.cpython-311-x86_64.so). */
void scan_module_of_path(const char* path, char* out, size_t cap) {
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t len = strcspn(base, ".");
  if (len >= cap) len = cap - 1;
  memcpy(out, base, len);
  out[len] = '\0';
}

/* The indentation of the line holding offset `at`, and where its text
 * starts. */
static int indent_of(const source* src, size_t at, size_t* text) {
  int line = scan_line_of(src, at) - 1;
  size_t b = src->line_at[line];
  size_t i = b;
  while (i < src->len && (src->skel[i] == ' ' || src->skel[i] == '\t')) i++;
  if (text) *text = i;
  return (int)(i - b);
}

/* The end of the block that the header line at `header` opens: the first
 * later line with text at an indentation of the header's or less. */
static size_t block_end(const source* src, size_t header) {
  int base = indent_of(src, header, NULL);
  int line = scan_line_of(src, header); /* the next line's index */
  for (; (size_t)line < src->num_lines; line++) {
    size_t text;
    int ind = indent_of(src, src->line_at[line], &text);
    if (text < src->len && src->skel[text] != '\n' && ind <= base) return src->line_at[line];
  }
  return src->len;
}

/* A `def`/`cdef`/`cpdef` header at the line starting at `text`: the
 * function's name and the offset of its '('; 0 when the line is none. */
static int def_header(const source* src, size_t text, char* name, size_t cap, size_t* open) {
  const char* k = src->skel;
  static const char* const starts[] = {"def ", "cdef ", "cpdef ", NULL};
  int is_def = 0;
  for (int i = 0; starts[i] && !is_def; i++)
    is_def = !strncmp(k + text, starts[i], strlen(starts[i]));
  if (!is_def) return 0;
  size_t eol = text;
  while (eol < src->len && k[eol] != '\n') eol++;
  const char* paren = memchr(k + text, '(', eol - text);
  if (paren == NULL) return 0;
  size_t e = (size_t)(paren - k);
  while (e > text && k[e - 1] == ' ') e--;
  size_t b = e;
  while (b > text && scan_ident_char((unsigned char)k[b - 1])) b--;
  if (b == e || e - b >= cap) return 0;
  memcpy(name, k + b, e - b);
  name[e - b] = '\0';
  *open = (size_t)(paren - k);
  return 1;
}

int scan_py_makers(const source* src, maker* out, int max) {
  if (!src->cython) return 0;
  int n = 0;
  for (size_t line = 0; line < src->num_lines && n < max; line++) {
    size_t text;
    indent_of(src, src->line_at[line], &text);
    char name[NAME_CAP];
    size_t open;
    if (!def_header(src, text, name, sizeof name, &open)) continue;
    size_t end = block_end(src, text);
    const char* body = src->skel + text;
    const char* capsule = NULL;
    for (const char* p = body; (p = strstr(p, "PyCapsule_New")) != NULL && p < src->skel + end; p++)
      capsule = p;
    if (capsule == NULL) continue;
    /* A helper that registers by itself (early jaxlib's
     * register_cpu_custom_call_target) is matched by that call.  Only its
     * body says so: veros's helper that fills its dict is itself named
     * register_custom_call_target. */
    size_t params_end = scan_closing(src, open);
    if (params_end >= end) continue;
    char block[TEXT_CAP];
    scan_text_of(src, params_end, end, block, sizeof block);
    if (strstr(block, "register_")) continue;
    maker* m = &out[n++];
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    /* DICT[key] = PyCapsule_New(...) */
    const char* eq = capsule;
    while (eq > body && *eq != '=' && *eq != '\n') eq--;
    const char* rb = eq;
    while (rb > body && *rb != ']' && *rb != '\n') rb--;
    if (*eq == '=' && *rb == ']') {
      const char* lb = rb;
      while (lb > body && *lb != '[' && *lb != '\n') lb--;
      const char* w = lb;
      while (w > body && scan_ident_char((unsigned char)w[-1])) w--;
      if (*lb == '[' && w < lb && (size_t)(lb - w) < sizeof m->dict) {
        memcpy(m->dict, w, (size_t)(lb - w));
        m->dict[lb - w] = '\0';
      }
    }
  }
  return n;
}

void scan_py_maker_call(scan* s, const source* src, const maker* m, size_t at, size_t open,
                        size_t close) {
  args a;
  scan_split_args(src, open, close, &a);
  if (a.n < 2) return;
  char name[NAME_CAP];
  if (!scan_literal(src, a.begin[0], a.end[0], name, sizeof name)) return;
  finding* f = scan_add(s, REGISTRATION, src, scan_line_of(src, at), m->name);
  snprintf(f->name, sizeof f->name, "%s", name);
  scan_function_of(src, a.begin[1], a.end[1], f->function, sizeof f->function);
  scan_text_of(src, a.begin[1], a.end[1], f->expr, sizeof f->expr);
  scan_module_of_path(src->path, f->module, sizeof f->module);
  snprintf(f->mapping, sizeof f->mapping, "%s", m->dict[0] ? m->dict : "<its dict>");
  f->offered = 1;
}

void scan_py_mapping_loop(const source* src, size_t at, char* module, size_t mcap, char* mapping,
                          size_t pcap) {
  module[0] = mapping[0] = '\0';
  /* The `for` header of the loop the registration is in: the nearest line
   * above at a smaller indentation, up to four lines up. */
  int ind = indent_of(src, at, NULL);
  int line = scan_line_of(src, at) - 1;
  for (int up = 1; up <= 4 && line - up >= 0; up++) {
    size_t text;
    int i = indent_of(src, src->line_at[line - up], &text);
    if (i >= ind) continue;
    if (strncmp(src->skel + text, "for ", 4) != 0) return;
    size_t eol = text;
    while (eol < src->len && src->skel[eol] != '\n') eol++;
    char header[TEXT_CAP];
    scan_text_of(src, text, eol, header, sizeof header);
    const char* items = strstr(header, ".items()");
    const char* in = strstr(header, " in ");
    if (items == NULL || in == NULL || in > items) return;
    const char* b = in + 4;
    while (*b == ' ') b++;
    /* MODULE.ATTR or MODULE.ATTR() */
    const char* dot = memchr(b, '.', (size_t)(items - b));
    if (dot == NULL) return;
    snprintf(module, mcap, "%.*s", (int)(dot - b), b);
    snprintf(mapping, pcap, "%.*s", (int)(items - dot - 1), dot + 1);
    for (const char* c = module; *c; c++)
      if (!scan_ident_char((unsigned char)*c)) module[0] = mapping[0] = '\0';
    return;
  }
}

/* Whether `expr` is the parameter `param` alone, or `param + "suffix"`;
 * the suffix (may be "") into out. */
static int param_name(const char* expr, const char* param, char* suffix, size_t cap) {
  size_t len = strlen(param);
  if (strncmp(expr, param, len) != 0 || scan_ident_char((unsigned char)expr[len])) return 0;
  const char* p = expr + len;
  while (*p == ' ') p++;
  suffix[0] = '\0';
  if (*p == '\0') return 1;
  if (*p++ != '+') return 0;
  while (*p == ' ') p++;
  char q = *p;
  if (q != '"' && q != '\'') return 0;
  const char* e = strchr(p + 1, q);
  if (e == NULL || e[1] != '\0') return 0;
  snprintf(suffix, cap, "%.*s", (int)(e - p - 1), p + 1);
  return 1;
}

/* The def around offset `at`: the nearest def header above at a smaller
 * indentation, through the blocks (if, try, with, for) between.  Its name
 * into fn, its '(' into open and its line's start into header; 0 when `at`
 * is in no def (at module level, or in a class's body). */
static int enclosing_def(const source* src, size_t at, char* fn, size_t cap, size_t* open,
                         size_t* header) {
  int ind = indent_of(src, at, NULL);
  for (int line = scan_line_of(src, at) - 2; line >= 0; line--) {
    size_t text;
    int i = indent_of(src, src->line_at[line], &text);
    if (text >= src->len || src->skel[text] == '\n' || i >= ind) continue;
    if (def_header(src, text, fn, cap, open)) {
      *header = src->line_at[line];
      return 1;
    }
    if (i == 0 || !strncmp(src->skel + text, "class ", 6)) return 0;
    ind = i;
  }
  return 0;
}

/* The name of each parameter of the def whose '(' is at `open` (its
 * annotation and default dropped); how many. */
int scan_py_params(const source* src, size_t open, char names[][NAME_CAP], int max) {
  size_t close = scan_closing(src, open);
  if (close >= src->len) return 0;
  args params;
  scan_split_args(src, open, close, &params);
  int n = 0;
  for (int p = 0; p < params.n && n < max; p++, n++) {
    scan_text_of(src, params.begin[p], params.end[p], names[n], NAME_CAP);
    names[n][strcspn(names[n], ":= ")] = '\0';
  }
  return n;
}

/* The next call of `fn` at or after `from`: the offset of its '(' (src->len
 * when none), the name's into *at.  Not another name ending in fn, nor a
 * def of fn; module.fn( only when `dotted`. */
size_t scan_py_next_call(const source* src, const char* fn, size_t from, int dotted, size_t* at) {
  const char* k = src->skel;
  size_t fl = strlen(fn);
  for (const char* p = k + from; (p = strstr(p, fn)) != NULL; p += fl) {
    size_t b = (size_t)(p - k);
    if ((b > 0 && (scan_ident_char((unsigned char)p[-1]) || (!dotted && p[-1] == '.'))) ||
        scan_ident_char((unsigned char)p[fl]))
      continue;
    size_t d = b;
    while (d > 0 && (k[d - 1] == ' ' || k[d - 1] == '\t')) d--;
    if (d >= 3 && !strncmp(k + d - 3, "def", 3)) continue;
    size_t open = scan_skip_space(k, b + fl, src->len);
    if (open < src->len && k[open] == '(') {
      *at = b;
      return open;
    }
  }
  return src->len;
}

/* A registration whose name is a parameter of the function around it: a
 * registration per call of that function in the file passing a literal
 * (the function kept as a wrapper where others may call it).  Returns how
 * many were made, or -1 where the function is a helper named as the
 * registration it wraps (its body, not a registration of its own). */
int scan_py_resolve_name(scan* s, const source* src, size_t at, const finding* computed,
                         const char* platform_expr) {
  char fn[NAME_CAP];
  size_t open = 0, header;
  int found = enclosing_def(src, at, fn, sizeof fn, &open, &header);
  if (!found) return 0;
  char names[32][NAME_CAP];
  int n = scan_py_params(src, open, names, 32), index = -1;
  char suffix[NAME_CAP];
  for (int p = 0; p < n && index < 0; p++)
    if (names[p][0] && param_name(computed->name_expr, names[p], suffix, sizeof suffix)) index = p;
  if (index < 0) return 0;
  /* A helper named as the registration it wraps (early jaxlib's Cython
   * register_cpu_custom_call_target): its calls are matched as that, each
   * a registration of its own, and this one is its body. */
  static const char* const registering[] = {"register_custom_call_target",
                                            "register_cpu_custom_call_target",
                                            "register_ffi_target", NULL};
  for (int r = 0; registering[r]; r++)
    if (!strcmp(fn, registering[r])) return -1;
  /* Every call of fn in the file with a literal in that place. */
  finding copy = *computed;
  int made = 0, computed_calls = 0;
  size_t b, o;
  for (size_t from = 0; (o = scan_py_next_call(src, fn, from, 0, &b)) < src->len; from = o) {
    size_t c = scan_closing(src, o);
    if (c >= src->len) continue;
    args a;
    scan_split_args(src, o, c, &a);
    int i = scan_positional(src, &a, index);
    char name[NAME_CAP];
    if (i < 0) continue;
    if (!scan_literal(src, a.begin[i], a.end[i], name, sizeof name)) {
      computed_calls++; /* wrappers.c's */
      continue;
    }
    finding* f = scan_add(s, REGISTRATION, src, copy.line, copy.what);
    const char* file = f->file;
    *f = copy;
    f->file = file;
    snprintf(f->name, sizeof f->name, "%s%s", name, suffix);
    snprintf(f->passed, sizeof f->passed, "%s", name);
    f->name_expr[0] = f->name_shape[0] = '\0';
    if (snprintf(f->via, sizeof f->via, "%s(\"%s\") at %s:%d, the name passed in as %s", fn, name,
                 src->path, scan_line_of(src, b), copy.name_expr) >= (int)sizeof f->via)
      memcpy(f->via + sizeof f->via - 4, "...", 4);
    made++;
  }
  /* Its other calls, here with a computed name or in other files: the
   * second walk's (wrappers.c), which leaves this file's literals alone. */
  if (made == 0 || computed_calls > 0)
    scan_wrapper_pending(s, fn, names, n, index, suffix, computed, platform_expr,
                         made ? src->path : NULL);
  return made;
}

void scan_py_getattr_module(const char* expr, char* module, size_t cap) {
  module[0] = '\0';
  const char* g = strstr(expr, "getattr(");
  if (g == NULL) return;
  g += 8;
  while (*g == ' ') g++;
  size_t len = 0;
  while (scan_ident_char((unsigned char)g[len])) len++;
  if (len == 0 || g[len] != ',' || len >= cap) return;
  memcpy(module, g, len);
  module[len] = '\0';
}

/* How a computed piece of a name (its `len` bytes at `at`) is shown: <id>
 * when it calls id(), else <...>. */
static const char* piece_mark(const char* at, size_t len) {
  char piece[TEXT_CAP];
  snprintf(piece, sizeof piece, "%.*s", (int)len, at);
  return strstr(piece, "id(") ? "<id>" : "<...>";
}

/* The pattern of a name expression: the string pieces kept, each computed
 * piece holding an id() call as <id>, any other as <...>; pieces joined by
 * + or inside an f-string's braces. */
static void name_pattern(const char* e, char* out, size_t cap) {
  size_t o = 0;
#define PUT(text)                                                           \
  do {                                                                      \
    for (const char* t_ = (text); *t_ && o + 1 < cap; t_++) out[o++] = *t_; \
  } while (0)
  for (size_t i = 0; e[i];) {
    int fstr = (e[i] == 'f' || e[i] == 'F') && (e[i + 1] == '"' || e[i + 1] == '\'');
    if (fstr || e[i] == '"' || e[i] == '\'') {
      char q = e[i += fstr];
      for (i++; e[i] && e[i] != q; i++) {
        if (fstr && e[i] == '{') {
          size_t j = i;
          while (e[j] && e[j] != '}') j++;
          PUT(piece_mark(e + i, j - i));
          i = e[j] ? j : j - 1;
          continue;
        }
        if (e[i] == '\\' && e[i + 1]) i++;
        if (o + 1 < cap) out[o++] = e[i];
      }
      if (e[i]) i++;
      continue;
    }
    if (e[i] == '+' || e[i] == ' ' || e[i] == '\t') {
      i++;
      continue;
    }
    /* A computed piece, to the next + outside brackets. */
    size_t j = i;
    int depth = 0;
    for (; e[j] && !(depth == 0 && e[j] == '+'); j++) {
      if (e[j] == '(' || e[j] == '[') depth++;
      if (e[j] == ')' || e[j] == ']') depth--;
    }
    PUT(piece_mark(e + i, j - i));
    i = j;
  }
#undef PUT
  out[o] = '\0';
}

static int dotted_name(const char* s) {
  if (!*s) return 0;
  for (; *s; s++)
    if (!scan_ident_char((unsigned char)*s) && *s != '.') return 0;
  return 1;
}

/* Whether a name expression is built from strings and computed pieces:
 * a string literal, and a + or an f-string's braces. */
static int computed_string(const char* e) {
  const char* quote = strpbrk(e, "\"'");
  if (quote == NULL) return 0;
  int fstr = quote > e && (quote[-1] == 'f' || quote[-1] == 'F');
  return strchr(e, '+') != NULL || (fstr && strchr(quote, '{') != NULL);
}

/* A registration's name computed at run time: `expr` itself, or what the
 * variable or attribute it names (self.target, xlaName) was last assigned
 * above `at`.  When it calls id(), a name per object: its pattern into
 * `pattern`; any other built from strings and values: its shape into
 * `shape`.  Each left empty otherwise. */
void scan_py_instance_name(const source* src, size_t at, const char* expr, char* pattern,
                           char* shape, size_t cap) {
  char rhs[TEXT_CAP];
  pattern[0] = shape[0] = '\0';
  snprintf(rhs, sizeof rhs, "%s", expr);
  if (!strstr(rhs, "id(") && dotted_name(expr)) {
    /* A plain name is a local of the def around `at` (an attribute may be
     * set in another method); an assignment starts its line, so that a
     * keyword argument of a call (name=...) is none. */
    size_t n = strlen(expr), value = 0, from = 0, open;
    char fn[NAME_CAP];
    if (!strchr(expr, '.') && !enclosing_def(src, at, fn, sizeof fn, &open, &from)) from = 0;
    for (const char* p = src->skel + from; (p = strstr(p, expr)) != NULL && p < src->skel + at;
         p += n) {
      size_t b = (size_t)(p - src->skel), t = b;
      while (t > 0 && (src->skel[t - 1] == ' ' || src->skel[t - 1] == '\t')) t--;
      if (t > 0 && src->skel[t - 1] != '\n') continue;
      size_t eq = scan_skip_space(src->skel, b + n, src->len);
      if (eq + 1 < src->len && src->skel[eq] == '=' && src->skel[eq + 1] != '=') value = eq + 1;
    }
    if (value == 0) return;
    size_t b = scan_skip_space(src->code, value, src->len), e = b;
    while (e < src->len && src->code[e] != '\n') e++;
    scan_text_of(src, b, e, rhs, sizeof rhs);
  }
  if (strstr(rhs, "id("))
    name_pattern(rhs, pattern, cap);
  else if (computed_string(rhs))
    name_pattern(rhs, shape, cap);
}

/* The method a kernel expression ends by calling (self.compiled.capsule()
 * gives "capsule"); 0 when it ends otherwise. */
int scan_py_method_called(const char* expr, char* method, size_t cap) {
  size_t n = strlen(expr);
  if (n < 3 || expr[n - 1] != ')') return 0;
  int depth = 0;
  size_t open = n;
  while (open-- > 0) {
    if (expr[open] == ')') depth++;
    if (expr[open] == '(' && --depth == 0) break;
  }
  if (open == (size_t)-1 || open == 0) return 0;
  size_t b = open;
  while (b > 0 && scan_ident_char((unsigned char)expr[b - 1])) b--;
  if (b == open || b == 0 || expr[b - 1] != '.' || open - b >= cap) return 0;
  memcpy(method, expr + b, open - b);
  method[open - b] = '\0';
  return 1;
}
