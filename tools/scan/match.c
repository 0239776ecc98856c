/*
 * What a C, C++, CUDA or HIP file holds: legacy forms told by parameter
 * lists, and the registrations, call sites and typed handlers its matchers
 * recognise.  Python and Cython are read by ccshim.scan (pyfiles.c); the
 * forms of the Cython functions it finds are told here too
 * (scan_legacy_form).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "scan.h"

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
    } else if (scan_ident_char((unsigned char)*p)) {
      const char* q = p;
      while (scan_ident_char((unsigned char)*q)) q++;
      size_t len = (size_t)(q - p);
      const char* after = q;
      while (*after == ' ') after++;
      if (after[0] == ':' && after[1] == ':') { /* a namespace: se::gpu::GpuStreamHandle */
        p = after + 2;
        continue;
      }
      int drop =
          (len == 5 && !strncmp(p, "const", 5)) || (len == 8 && !strncmp(p, "volatile", 8)) ||
          (len == 6 && !strncmp(p, "struct", 6)) || (len >= 8 && !strncmp(p, "restrict", 8)) ||
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
      {CCSHIM_FORM_CPU_V1, 2, {P_VOIDP, P_VOIDPP}},
      {CCSHIM_FORM_CPU_V2, 3, {P_VOIDP, P_VOIDPP, P_STATUS}},
      {CCSHIM_FORM_CPU_V3, 5, {P_VOIDP, P_VOIDPP, P_CHARP, P_SIZE, P_STATUS}},
      /* The out written as the pointer table a tuple result is (mpi4jax's
       * `cdef void f(void** out_ptr, void** data_ptr) nogil`). */
      {CCSHIM_FORM_CPU_V1, 2, {P_VOIDPP, P_VOIDPP}},
      {CCSHIM_FORM_CPU_V2, 3, {P_VOIDPP, P_VOIDPP, P_STATUS}},
      {CCSHIM_FORM_CPU_V3, 5, {P_VOIDPP, P_VOIDPP, P_CHARP, P_SIZE, P_STATUS}},
      {CCSHIM_FORM_GPU_V1, 4, {P_STREAM, P_VOIDPP, P_CHARP, P_SIZE}},
      /* The stream as a void* (mpi4jax's SYCL kernels): four parameters are
       * no CPU form. */
      {CCSHIM_FORM_GPU_V1, 4, {P_VOIDP, P_VOIDPP, P_CHARP, P_SIZE}},
      {CCSHIM_FORM_GPU_V23, 5, {P_STREAM, P_VOIDPP, P_CHARP, P_SIZE, P_STATUS}},
  };
  for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
    if (forms[f].n != n) continue;
    int same = 1;
    for (int i = 0; i < n; i++) same &= forms[f].p[i] == p[i];
    if (same) return forms[f].form;
  }
  return CCSHIM_FORM_NONE;
}

/* `void NAME(params) {` (C family) or `cdef void NAME(params) [nogil]:`
 * (Cython) at the `void` found at offset i. */
/* The extension module a file defines (PYBIND11_MODULE(name, m) or
 * NB_MODULE(name, m)), whose registrations() holds its capsules; "" when
 * the file names none. */
static void extension_module(const source* src, char* out, size_t cap) {
  static const char* const macros[] = {"PYBIND11_MODULE(", "NB_MODULE(", NULL};
  out[0] = '\0';
  for (int m = 0; macros[m] && !out[0]; m++) {
    const char* at = strstr(src->skel, macros[m]);
    if (at == NULL) continue;
    size_t b = scan_skip_space(src->skel, (size_t)(at - src->skel) + strlen(macros[m]), src->len);
    size_t e = b;
    while (e < src->len && scan_ident_char((unsigned char)src->skel[e])) e++;
    size_t len = e - b < cap ? e - b : cap - 1;
    memcpy(out, src->skel + b, len);
    out[len] = '\0';
  }
}

int scan_legacy_form(finding* d, char params[][TEXT_CAP], int n, const char* path) {
  param p[8];
  int np = n > 8 ? 8 : n;
  for (int q = 0; q < np; q++) p[q] = param_kind(params[q]);
  form f = n <= 8 ? form_of(p, np) : CCSHIM_FORM_NONE;
  if (f == CCSHIM_FORM_NONE) return 0;
  d->form = f;
  d->platform = PLAT_CPU;
  if (f >= CCSHIM_FORM_GPU_V1) {
    const char* stream = params[0];
    d->platform = strstr(stream, "hip") || strstr(path, ".hip")    ? PLAT_ROCM
                  : strstr(stream, "cuda") || strstr(stream, "CU") ? PLAT_CUDA
                                                                   : PLAT_GPU;
  }
  d->version = f == CCSHIM_FORM_CPU_V1 || f == CCSHIM_FORM_GPU_V1 ? 1
               : f == CCSHIM_FORM_CPU_V2                          ? 2
               : f == CCSHIM_FORM_CPU_V3                          ? 3
                                                                  : 0;
  return 1;
}

static void definition(scan* s, const source* src, size_t i) {
  const char* k = src->skel;
  size_t n = src->len;
  size_t j = scan_skip_space(k, i + 4, n);
  size_t name_b = j;
  for (;;) {
    while (j < n && (scan_ident_char((unsigned char)k[j]) || (k[j] == ':' && k[j + 1] == ':') ||
                     (j > name_b && k[j] == ':' && k[j - 1] == ':')))
      j++;
    /* Out-of-class members of templates: Getrf<T>::Kernel. */
    if (j >= n || k[j] != '<' || j == name_b) break;
    size_t m = j;
    for (int depth = 0; m < n; m++) {
      depth += k[m] == '<';
      if (k[m] == '>' && --depth == 0) break;
      if (k[m] == ';' || k[m] == '{' || k[m] == '(') m = n - 1; /* not template args */
    }
    if (m + 2 >= n || k[m + 1] != ':' || k[m + 2] != ':') break;
    j = m + 1;
  }
  size_t name_e = j;
  if (name_e == name_b || isdigit((unsigned char)k[name_b])) return;
  j = scan_skip_space(k, j, n);
  if (j >= n || k[j] != '(') return;
  size_t close = scan_closing(src, j);
  if (close >= n) return;
  /* After the parameters: qualifiers, then the body. */
  size_t after = scan_skip_space(k, close + 1, n);
  for (;;) {
    static const char* const quals[] = {"noexcept", "__attribute__", "->", "void", NULL};
    int moved = 0;
    for (int q = 0; quals[q]; q++) {
      size_t ql = strlen(quals[q]);
      if (!strncmp(k + after, quals[q], ql)) {
        after = scan_skip_space(k, after + ql, n);
        if (!strcmp(quals[q], "__attribute__") && after < n && k[after] == '(')
          after = scan_skip_space(k, scan_closing(src, after) + 1, n);
        moved = 1;
      }
    }
    if (!moved) break;
  }
  if (after >= n || k[after] != '{') return;
  args a;
  scan_split_args(src, j, close, &a);
  char params[8][TEXT_CAP];
  for (int q = 0; q < a.n && q < 8; q++)
    scan_text_of(src, a.begin[q], a.end[q], params[q], sizeof params[q]);
  finding d;
  memset(&d, 0, sizeof d);
  if (!scan_legacy_form(&d, params, a.n, src->path)) return;
  finding* f = scan_add(s, DEFINITION, src, scan_line_of(src, i), "definition");
  char qualified[NAME_CAP];
  scan_text_of(src, name_b, name_e, qualified, sizeof qualified);
  const char* last = strrchr(qualified, ':');
  snprintf(f->function, sizeof f->function, "%s", last ? last + 1 : qualified);
  scan_scope_of(qualified, f->scope, sizeof f->scope);
  snprintf(f->name, sizeof f->name, "%s", f->function);
  f->form = d.form;
  f->platform = d.platform;
  f->version = d.version;
  /* C++ mangles names unless extern "C" says otherwise (on the line, or a
   * block earlier in the file: an approximation that errs towards C). */
  const char* ext = strstr(src->path, ".c");
  int cxx = ext && strcmp(ext, ".c") != 0 && strcmp(ext, ".h") != 0;
  if (cxx || strstr(src->path, ".cu") || strstr(src->path, ".hip")) {
    size_t line_b = src->line_at[scan_line_of(src, i) - 1];
    int c_linkage = 0;
    for (size_t x = 0; x < src->num_externs && !c_linkage; x++) {
      size_t m = src->externs[x];
      if (m + 10 > i) break;
      size_t brace = scan_skip_space(src->code, m + 10, n);
      c_linkage =
          m >= line_b || (brace < n && src->code[brace] == '{' && i < scan_closing(src, brace));
    }
    f->cxx_linkage = !c_linkage;
  }
}

/* --- Matchers ----------------------------------------------------------------------- */

/* Reads the platform out of an argument: a literal, or a platform= word. */
static plat platform_arg(const source* src, const args* a, int pos, const char* kw, plat dflt) {
  size_t b, e;
  char t[NAME_CAP];
  int i = pos >= 0 ? scan_positional(src, a, pos) : -1;
  if (kw && scan_keyword(src, a, kw, &b, &e)) {
    if (scan_literal(src, b, e, t, sizeof t)) return scan_plat_parse(t);
    return PLAT_UNKNOWN;
  }
  if (i >= 0) {
    if (scan_literal(src, a->begin[i], a->end[i], t, sizeof t)) return scan_plat_parse(t);
    return PLAT_UNKNOWN;
  }
  return dflt;
}

/* The target name in argument `pos` (or keyword `kw`): a literal into
 * f->name, anything else into f->name_expr. */
static void name_arg(const source* src, const args* a, int pos, const char* kw, finding* f) {
  size_t b = 0, e = 0;
  int i = scan_positional(src, a, pos);
  if (kw && scan_keyword(src, a, kw, &b, &e)) {
    /* by keyword */
  } else if (i >= 0) {
    b = a->begin[i];
    e = a->end[i];
  } else {
    return;
  }
  if (!scan_literal(src, b, e, f->name, sizeof f->name)) {
    f->name[0] = '\0';
    scan_text_of(src, b, e, f->name_expr, sizeof f->name_expr);
  }
}

/* The C family's registration macros and calls. */
/* dict["name"] = EncapsulateFunction(kernel), a registrations() dict
 * (jaxlib's helper; nanobind projects often spell it snake_case). */
/* m.def("name", []() { return encapsulate_function(fn); }): a pybind11 or
 * nanobind module function that returns the capsule.  The attribute's name
 * into `attr`; 0 when `at` is in no such lambda. */
static int module_def_lambda(const source* src, size_t at, char* attr, size_t cap) {
  size_t from = at > 400 ? at - 400 : 0;
  const char* hit = NULL;
  for (const char* p = src->skel + from; (p = strstr(p, ".def(")) != NULL && p < src->skel + at;
       p++)
    hit = p;
  if (hit == NULL) return 0;
  size_t open = (size_t)(hit - src->skel) + 4;
  size_t close = scan_closing(src, open);
  if (close >= src->len || close < at) return 0;
  args a;
  scan_split_args(src, open, close, &a);
  if (a.n < 2 || a.begin[1] > at || !scan_literal(src, a.begin[0], a.end[0], attr, cap)) return 0;
  /* A Python name: not a template's placeholder ({{mod.name}}). */
  for (const char* c = attr; *c; c++)
    if (!scan_ident_char((unsigned char)*c)) return 0;
  return attr[0] != '\0';
}

static void match_encapsulate(scan* s, const source* src, const args* a, size_t at, int line) {
  size_t b = at;
  while (b > 0 && src->code[b - 1] != ';' && src->code[b - 1] != '{' && src->code[b - 1] != '}')
    b--;
  const char* lb = memchr(src->code + b, '[', at - b);
  char attr[NAME_CAP];
  if (lb == NULL && a->n > 0 && module_def_lambda(src, at, attr, sizeof attr)) {
    finding* f = scan_add(s, REGISTRATION, src, line, "m.def");
    scan_function_of(src, a->begin[0], a->end[a->n - 1], f->function, sizeof f->function);
    scan_text_of(src, a->begin[0], a->end[a->n - 1], f->expr, sizeof f->expr);
    scan_scope_of(f->expr, f->scope, sizeof f->scope);
    extension_module(src, f->module, sizeof f->module);
    snprintf(f->mapping, sizeof f->mapping, "%.*s()", (int)sizeof f->mapping - 3, attr);
    f->offered = 1;
    return;
  }
  if (lb == NULL) return;
  size_t lo = (size_t)(lb - src->code) + 1, hi = lo;
  while (hi < at && src->code[hi] != ']') hi++;
  finding* f = scan_add(s, REGISTRATION, src, line, "EncapsulateFunction");
  scan_literal(src, scan_skip_space(src->code, lo, hi), hi, f->name, sizeof f->name);
  /* jaxlib's convention, which its Python side applies when registering
   * the dict: a name ending in _ffi is a typed-FFI handler. */
  size_t len = strlen(f->name);
  if (len > 4 && !strcmp(f->name + len - 4, "_ffi")) f->kind = TYPED;
  if (a->n > 0) {
    /* Its one argument whole: template arguments hold commas (f<1, float>). */
    scan_function_of(src, a->begin[0], a->end[a->n - 1], f->function, sizeof f->function);
    scan_text_of(src, a->begin[0], a->end[a->n - 1], f->expr, sizeof f->expr);
    scan_scope_of(f->expr, f->scope, sizeof f->scope);
  }
  extension_module(src, f->module, sizeof f->module);
  snprintf(f->mapping, sizeof f->mapping, "registrations()");
  f->offered = 1;
}

static void match_c(scan* s, const source* src, const char* word, size_t at, size_t open,
                    size_t close) {
  args a;
  scan_split_args(src, open, close, &a);
  int line = scan_line_of(src, at);
  int macro = !strncmp(word, "XLA_REGISTER_CUSTOM_CALL_TARGET", 31) ||
              !strncmp(word, "XLA_CPU_REGISTER_CUSTOM_CALL_TARGET", 35);
  if (macro) {
    int with_sym = strstr(word, "_WITH_SYM") != NULL;
    int cpu = !strncmp(word, "XLA_CPU", 7);
    finding* f = scan_add(s, REGISTRATION, src, line, word);
    if (with_sym && a.n >= 1) name_arg(src, &a, 0, NULL, f);
    int fn = with_sym ? 1 : 0;
    if (a.n > fn) {
      scan_function_of(src, a.begin[fn], a.end[fn], f->function, sizeof f->function);
      scan_text_of(src, a.begin[fn], a.end[fn], f->expr, sizeof f->expr);
      scan_scope_of(f->expr, f->scope, sizeof f->scope);
    }
    if (!with_sym) snprintf(f->name, sizeof f->name, "%s", f->function);
    f->platform = cpu ? PLAT_CPU : platform_arg(src, &a, with_sym ? 2 : 1, NULL, PLAT_UNKNOWN);
    return;
  }
  if (!strcmp(word, "Register")) {
    /* CustomCallTargetRegistry::Global()->Register("name", address, "platform") */
    size_t b = at > 60 ? at - 60 : 0;
    char before[128];
    scan_text_of(src, b, at, before, sizeof before);
    if (!strstr(before, "CustomCallTargetRegistry")) return;
    finding probe;
    memset(&probe, 0, sizeof probe);
    name_arg(src, &a, 0, NULL, &probe);
    if (probe.name[0] == '\0') return; /* the registry's own plumbing */
    finding* f = scan_add(s, REGISTRATION, src, line, "CustomCallTargetRegistry::Register");
    snprintf(f->name, sizeof f->name, "%s", probe.name);
    if (a.n > 1) {
      scan_function_of(src, a.begin[1], a.end[1], f->function, sizeof f->function);
      scan_text_of(src, a.begin[1], a.end[1], f->expr, sizeof f->expr);
      scan_scope_of(f->expr, f->scope, sizeof f->scope);
    }
    f->platform = platform_arg(src, &a, 2, NULL, PLAT_UNKNOWN);
    return;
  }
  if (!strcmp(word, "EncapsulateFunction") || !strcmp(word, "encapsulate_function")) {
    match_encapsulate(s, src, &a, at, line);
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
    finding* f = scan_add(s, CALL_SITE, src, line, word);
    snprintf(f->name, sizeof f->name, "%s", probe.name);
    if (a.n > 4) scan_text_of(src, a.begin[4], a.end[4], f->opaque, sizeof f->opaque);
    f->version = 1;
    f->version_default = 1;
    for (int i = 0; i < a.n; i++) {
      char t[TEXT_CAP];
      scan_text_of(src, a.begin[i], a.end[i], t, sizeof t);
      if (strstr(t, "API_VERSION_")) {
        f->version = scan_version_of(src, a.begin[i], a.end[i]);
        if (f->version < 0) f->version = 0;
        f->version_default = 0;
      }
    }
    if (f->version == 4) f->kind = TYPED;
    return;
  }
  if (!strncmp(word, "XLA_FFI_DEFINE_HANDLER", 22) || !strcmp(word, "XLA_FFI_REGISTER_HANDLER")) {
    finding* f = scan_add(s, TYPED, src, line, word);
    if (!strcmp(word, "XLA_FFI_REGISTER_HANDLER")) {
      name_arg(src, &a, 1, NULL, f);
      f->platform = platform_arg(src, &a, 2, NULL, PLAT_UNKNOWN);
    } else if (a.n > 0) {
      scan_text_of(src, a.begin[0], a.end[0], f->name, sizeof f->name);
    }
  }
}

static const char* const c_words[] = {"XLA_REGISTER_CUSTOM_CALL_TARGET",
                                      "XLA_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM",
                                      "XLA_CPU_REGISTER_CUSTOM_CALL_TARGET",
                                      "XLA_CPU_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM",
                                      "Register",
                                      "EncapsulateFunction",
                                      "encapsulate_function",
                                      "CustomCall",
                                      "CustomCallWithLayout",
                                      "XLA_FFI_DEFINE_HANDLER",
                                      "XLA_FFI_DEFINE_HANDLER_SYMBOL",
                                      "XLA_FFI_DEFINE_HANDLER_AUTO",
                                      "XLA_FFI_REGISTER_HANDLER",
                                      NULL};
/* Whether offset `at` lies in a preprocessor directive (a #define's body
 * is no registration), continuation lines included. */
static int in_directive(const source* src, size_t at) {
  int line = scan_line_of(src, at) - 1;
  while (line > 0) {
    size_t end = src->line_at[line] - 1; /* the previous line's newline */
    if (end == 0 || src->code[end - 1] != '\\') break;
    line--;
  }
  size_t b = scan_skip_space(src->code, src->line_at[line], src->len);
  return b < src->len && src->code[b] == '#';
}

void scan_source(scan* s, source* src) {
  const char* k = src->skel;
  size_t n = src->len;
  for (size_t i = 0; i < n;) {
    if (!scan_ident_char((unsigned char)k[i]) ||
        (i > 0 && scan_ident_char((unsigned char)k[i - 1]))) {
      i++;
      continue;
    }
    size_t j = i;
    while (j < n && scan_ident_char((unsigned char)k[j])) j++;
    char word[64];
    size_t len = j - i;
    if (len < sizeof word) {
      memcpy(word, k + i, len);
      word[len] = '\0';
      if (in_directive(src, i)) {
        /* macros define, not register */
      } else if (!strcmp(word, "void") || !strcmp(word, "auto")) {
        definition(s, src, i); /* auto: C++'s deduced or trailing (-> void) return */
      } else {
        for (int w = 0; c_words[w]; w++) {
          if (strcmp(word, c_words[w]) != 0) continue;
          size_t open = scan_skip_space(k, j, n);
          if (open >= n || k[open] != '(') break;
          size_t close = scan_closing(src, open);
          if (close >= n) break;
          match_c(s, src, word, i, open, close);
          break;
        }
      }
    }
    i = j;
  }
}
