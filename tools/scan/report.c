/*
 * `ccshim scan DIR [--json]`: the inventory of legacy custom calls in a
 * source tree of C, C++, CUDA, HIP, Python and Cython.
 *
 * It reads each C, C++, CUDA and HIP file twice over: once with comments
 * blanked (to read string literals such as target names) and once with
 * string contents blanked as well (to find code: a registration quoted in a
 * comment is not a registration).  Offsets are the same in both, so a match
 * in one reads in the other.  Python and Cython files are read by
 * ccshim.scan, with libcst and with Cython's parser (pyfiles.c).  What it
 * finds:
 *
 *   registrations  XLA_REGISTER_CUSTOM_CALL_TARGET[_WITH_SYM], the XLA_CPU_
 *                  variants, CustomCallTargetRegistry::Global()->Register,
 *                  EncapsulateFunction in a registrations() dict, pybind11
 *                  m.def lambdas returning a capsule, Cython helpers that
 *                  make capsules into the module's dict,
 *                  register_custom_call_target, register_cpu_custom_call_target,
 *                  register_ffi_target(..., api_version=0), in loops over a
 *                  module's mapping, or named through a function's parameter
 *   call sites     custom_call(..., api_version=, backend_config=),
 *                  CustomCall[WithLayout|WithAliasing](...), CustomCallOp,
 *                  ffi_call(..., custom_call_api_version=N < 4)
 *   definitions    functions whose parameters are a legacy form: CPU v1, v2,
 *                  v3; GPU v1, v2/v3 (void, auto, -> void; Cython cdef); those
 *                  nothing registers or calls are candidates, listed apart
 *   typed          XLA_FFI_DEFINE_HANDLER*, XLA_FFI_REGISTER_HANDLER,
 *                  register_ffi_target(...) with api_version 1 (the default)
 *
 * and joins them per target name.  Exit status: 0, or 1 when some file could
 * not be scanned (a binary or unreadable file with a source extension: one
 * line each on stderr, after the inventory of the rest), or 2 when DIR is
 * wrong.  This file prints the inventory; scan.h lists the other parts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../tools.h"
#include "scan.h"

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
  /* A capsule a module offers (its dict, its registrations(), a module
   * function): via is how the module makes it, not how it is registered. */
  if (f->kind == REGISTRATION && f->offered) printf(", \"offered\": true");
  putchar('}');
}

static const finding* anchor(const target* t) {
  return t->num_reg ? t->reg[0] : t->def ? t->def : t->call[0];
}

/* The exported programs, as JSON array elements; returns their legacy calls. */
static size_t print_json_artifacts(const scan* s) {
  size_t art_calls = 0;
  for (size_t i = 0; i < s->num_arts; i++) {
    const artifact* a = &s->arts[i];
    art_calls += a->num_calls;
    printf("%s\n    {\"file\": ", i ? "," : "");
    json_str(a->shown);
    if (!a->read) {
      printf(", \"error\": ");
      json_str(a->error ? a->error : "");
      printf("}");
      continue;
    }
    printf(", \"kind\": ");
    json_str(a->kind ? a->kind : "");
    printf(", \"platforms\": ");
    json_str(a->platforms ? a->platforms : "");
    printf(
        ", \"typed_calls\": %d, \"builtin_calls\": %d, \"rewritten_calls\": %d,\n"
        "     \"legacy_calls\": [",
        a->typed, a->builtin, a->rewritten);
    for (size_t k = 0; k < a->num_calls; k++) {
      const artifact_call* c = &a->calls[k];
      printf("%s{\"target\": ", k ? ", " : "");
      json_str(c->target);
      printf(", \"api_version\": %d, \"opaque_bytes\": %ld, \"signature\": ", c->version,
             c->opaque_bytes);
      json_str(c->signature);
      printf(", \"location\": ");
      json_str(c->location);
      printf("}");
    }
    printf("],\n     \"rewrite\": ");
    char* rw = scan_rewrite_line(a->shown);
    json_str(a->num_calls ? rw : "");
    free(rw);
    printf("}");
  }
  return art_calls;
}

static size_t count_candidates(const inventory* inv) {
  size_t n = 0;
  for (size_t i = 0; i < inv->n; i++) n += inv->t[i].candidate;
  return n;
}

/* Functions with legacy parameters that nothing registers or calls. */
static void print_json_candidates(const inventory* inv) {
  printf("\n  ],\n  \"candidates\": [");
  int first = 1;
  for (size_t i = 0; i < inv->n; i++) {
    const target* t = &inv->t[i];
    if (!t->candidate) continue;
    printf("%s\n    {\"name\": ", first ? "" : ",");
    json_str(t->name);
    printf(", \"file\": ");
    json_str(t->def->file);
    printf(", \"line\": %d, \"form\": \"%s\", \"function\": ", t->def->line,
           ccshim_legacy_form_text(t->form));
    json_str(t->def->function);
    printf("}");
    first = 0;
  }
}

static void print_json(const scan* s, const inventory* inv) {
  size_t typed = 0;
  for (size_t i = 0; i < s->n; i++) typed += s->f[i].kind == TYPED;
  printf("{\n  \"targets\": [");
  int shown = 0;
  for (size_t i = 0; i < inv->n; i++) {
    const target* t = &inv->t[i];
    if (t->candidate) continue;
    char w[LINE_CAP], wc[LINE_CAP], cc[LINE_CAP];
    scan_wrap_line(t, w, sizeof w);
    scan_wrap_line_c(t, wc, sizeof wc);
    scan_call_change(t, cc, sizeof cc);
    const finding* a = anchor(t);
    printf("%s\n    {\"name\": ", shown++ ? "," : "");
    json_str(t->name);
    printf(", \"name_pattern\": ");
    if (t->instance)
      json_str(t->instance->pattern);
    else if (t->computed && scan_name_shape(t)[0])
      json_str(scan_name_shape(t));
    else
      printf("null");
    printf(", \"platform\": \"%s\", \"api_version\": %d, \"api_version_from\": ",
           scan_plat_text(t->platform), t->version);
    json_str(t->how ? t->how : "");
    printf(", \"file\": ");
    json_str(a->file);
    printf(", \"line\": %d,\n     \"definition\": ", a->line);
    if (t->def) {
      json_site(t->def);
      printf(", \"form\": \"%s\"", ccshim_legacy_form_text(t->form));
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
    const char* pyx = scan_wrap_cython_file(t);
    printf(", \"wrap_language\": \"%s\"", pyx ? "cython" : "python");
    printf(", \"wrap_c\": ");
    json_str(wc);
    printf(",\n     \"call_site_change\": ");
    json_str(t->num_call ? cc : "");
    printf(", \"note\": ");
    json_str(t->note);
    printf("}");
  }
  print_json_candidates(inv);
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
  printf("\n  ],\n  \"artifacts\": [");
  size_t art_calls = print_json_artifacts(s);
  printf(
      "\n  ],\n  \"summary\": {\"files\": %zu, \"lines\": %zu, \"legacy_targets\": %zu, "
      "\"candidates\": %zu, \"typed\": %zu, \"unscanned_files\": %zu, \"artifacts\": %zu, "
      "\"artifact_legacy_calls\": %zu}\n}\n",
      s->files, s->lines, inv->n - count_candidates(inv), count_candidates(inv), typed, s->errors,
      s->num_arts, art_calls);
}

/* The candidates, apart; how many. */
static size_t print_text_candidates(const inventory* inv) {
  size_t candidates = count_candidates(inv);
  if (candidates == 0) return 0;
  printf(
      "candidates: functions with legacy parameters that nothing in the tree registers or "
      "calls\n");
  for (size_t i = 0; i < inv->n; i++)
    if (inv->t[i].candidate)
      printf("    %s  %s:%d (%s parameters)\n", inv->t[i].name, inv->t[i].def->file,
             inv->t[i].def->line, ccshim_legacy_form_text(inv->t[i].form));
  printf("\n");
  return candidates;
}

/* A target's first line: its name (and what it is computed as), platform,
 * API version and where it is. */
static void print_heading(const target* t, const finding* a) {
  char version[8] = "v?";
  if (t->version) snprintf(version, sizeof version, "v%d", t->version);
  if (scan_in_program(a)) { /* only in exported programs */
    printf("%s  %s %s  %s\n", t->name, scan_plat_text(t->platform), version, a->file);
    return;
  }
  const char* shape = t->computed ? scan_name_shape(t) : "";
  printf("%s%s%s%s  %s %s  %s:%d\n", t->name,
         t->instance   ? " (per instance: "
         : shape[0]    ? " (name computed: "
         : t->computed ? " (name computed)"
                       : "",
         t->instance ? t->instance->pattern : shape, t->instance || shape[0] ? ")" : "",
         scan_plat_text(t->platform), version, a->file, a->line);
}

static void print_text(const scan* s, const inventory* inv) {
  size_t typed = 0, by_form[PLAT_SYCL + 1][4] = {{0}}, unknown = 0, notes = 0, calls = 0;
  for (size_t i = 0; i < s->n; i++) typed += s->f[i].kind == TYPED;
  for (size_t i = 0; i < inv->n; i++) {
    const target* t = &inv->t[i];
    if (t->candidate) continue;
    const finding* a = anchor(t);
    char w[LINE_CAP], wc[LINE_CAP], cc[LINE_CAP];
    scan_wrap_line(t, w, sizeof w);
    scan_wrap_line_c(t, wc, sizeof wc);
    scan_call_change(t, cc, sizeof cc);
    print_heading(t, a);
    printf("    version    %s\n", t->how ? t->how : "");
    if (t->def)
      printf("    defined    %s:%d (%s parameters)\n", t->def->file, t->def->line,
             ccshim_legacy_form_text(t->form));
    for (int k = 0; k < t->num_reg; k++)
      printf("    registered %s:%d %s\n", t->reg[k]->file, t->reg[k]->line, t->reg[k]->what);
    for (int k = 0; k < t->num_call; k++)
      if (scan_in_program(t->call[k])) /* listed below with its program */
        printf("    called     %s, %s (api_version=%d)\n", t->call[k]->file, t->call[k]->what,
               t->call[k]->version);
      else if (t->call[k]->version)
        printf("    called     %s:%d %s(api_version=%d%s)\n", t->call[k]->file, t->call[k]->line,
               t->call[k]->what, t->call[k]->version,
               t->call[k]->version_default ? ", the default" : "");
      else
        printf("    called     %s:%d %s(api_version computed)\n", t->call[k]->file,
               t->call[k]->line, t->call[k]->what);
    const char* pyx = scan_wrap_cython_file(t);
    if (pyx)
      printf(
          "    wrap       %s\n               (Cython, in %s: a cdef kernel that no Python object "
          "holds)\n",
          w, pyx);
    else
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
  size_t art_calls = 0;
  for (size_t i = 0; i < s->num_arts; i++) {
    const artifact* a = &s->arts[i];
    if (!a->read) {
      printf("%s  exported program, not read: %s\n\n", a->shown, a->error ? a->error : "");
      continue;
    }
    art_calls += a->num_calls;
    printf("%s  %s%s%s: %zu legacy call%s; %d typed, %d built-in, %d already rewritten\n", a->shown,
           a->kind ? a->kind : "", a->platforms && a->platforms[0] ? " for " : "",
           a->platforms ? a->platforms : "", a->num_calls, a->num_calls == 1 ? "" : "s", a->typed,
           a->builtin, a->rewritten);
    for (size_t k = 0; k < a->num_calls; k++) {
      const artifact_call* c = &a->calls[k];
      printf("    called     %s (api_version=%d, opaque %ld bytes) %s  %s\n", c->target, c->version,
             c->opaque_bytes, c->signature, c->location);
    }
    if (a->num_calls) {
      char* rw = scan_rewrite_line(a->shown);
      printf("    rewrite    %s\n", rw);
      free(rw);
    }
    printf("\n");
  }
  size_t candidates = print_text_candidates(inv);
  size_t num = inv->n - candidates;
  printf("%zu legacy target%s in %zu files (%zu lines):", num, num == 1 ? "" : "s", s->files,
         s->lines);
  for (int p = PLAT_CPU; p <= PLAT_SYCL; p++)
    for (int v = 1; v <= 3; v++)
      if (by_form[p][v]) printf(" %s v%d: %zu;", scan_plat_text((plat)p), v, by_form[p][v]);
  if (unknown) printf(" form unknown: %zu;", unknown);
  if (candidates) printf(" %zu candidate%s;", candidates, candidates == 1 ? "" : "s");
  printf(" %zu legacy call site%s; %zu typed-FFI handler%s or call%s already; %zu with notes",
         calls, calls == 1 ? "" : "s", typed, typed == 1 ? "" : "s", typed == 1 ? "" : "s", notes);
  if (s->num_arts)
    printf("; %zu exported program%s, %zu legacy call%s in them", s->num_arts,
           s->num_arts == 1 ? "" : "s", art_calls, art_calls == 1 ? "" : "s");
  printf("\n");
}

/* Joins the findings, prints the inventory, frees; the exit status. */
static int finish(scan* s) {
  inventory inv;
  memset(&inv, 0, sizeof inv);
  scan_read_artifacts(s);
  scan_build(s, &inv);
  if (s->json)
    print_json(s, &inv);
  else
    print_text(s, &inv);
  for (size_t i = 0; i < inv.n; i++) free(inv.t[i].how);
  free(inv.t);
  free(s->f);
  scan_free_artifacts(s);
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
      printf(
          "usage: ccshim scan DIR|FILE [--json]\n\n"
          "Lists the legacy custom-call targets of a source tree (C, C++, CUDA, HIP,\n"
          "Python, Cython): registrations, call sites and kernel definitions joined\n"
          "per target, with platform, API version (and how it is known), file:line,\n"
          "the line that wraps it with ccshim and the call-site change.  Python and\n"
          "Cython files are read by ccshim.scan (libcst, Cython's parser), and exported\n"
          "JAX programs in the tree (jax.export artifacts, StableHLO bytecode, .mlir)\n"
          "through ccshim.export, in $CCSHIM_PYTHON (when unset, the build's or\n"
          "python3); the programs' legacy calls are listed with the `ccshim rewrite`\n"
          "line for each.\n"
          "Exit status: 0; 1 when a file could not be scanned or an exported program\n"
          "not read (one line each on stderr, after the inventory); 2 when DIR is\n"
          "wrong.\n\n"
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
    scan_walk(&s, dir);
    scan_read_python(&s);
  } else if (scan_source_lang(dir, &l, &cython)) {
    scan_file(&s, dir, dir, l);
    scan_read_python(&s);
  } else if (scan_maybe_artifact(&s, dir, dir), s.num_arts) {
    /* an exported program, read through ccshim.export */
  } else {
    fprintf(stderr,
            "ccshim scan: %s: neither a directory, nor a C, C++, CUDA, HIP, Python or Cython "
            "source file, nor an exported JAX program (jax.export artifact or StableHLO "
            "module)\n",
            dir);
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
  scan_source_lang(name, &l, &cython);
  if (l == LANG_PY) {
    fprintf(stderr,
            "ccshim scan: %s: a Python or Cython file is read by ccshim.scan, not from a "
            "buffer\n",
            name);
    return 2;
  }
  char* code = malloc(len + 1);
  if (code == NULL) return 2;
  memcpy(code, data, len);
  scan_text(&s, name, l, code, len);
  return finish(&s);
}
