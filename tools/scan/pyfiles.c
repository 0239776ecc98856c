/*
 * A tree's Python and Cython files, read by ccshim.scan (with libcst and
 * with Cython's parser, the readers `ccshim port` edits them with), all at
 * once when the walk is over: the walk keeps each file's place among its
 * findings, and the findings Python gives for a file go there, so that the
 * inventory is in the walk's order.  The findings of calls of a project's
 * own registering function (which need every file read first) come after
 * them.  A Cython function's parameters come as written; their legacy form
 * is told here as a C function's is (match.c).  The records:
 * docs/contracts.md, section 4.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scan.h"

enum { RECORD_FIELDS = 20 }; /* tag, file index, then a finding's 18 */

/* Findings of one file (R records), or the late ones (W). */
typedef struct findings {
  finding* f;
  size_t n, cap;
} findings;

void scan_python_later(scan* s, const char* path, const char* shown) {
  s->py = scan_grow(s->py, &s->py_cap, sizeof *s->py, s->num_py + 1);
  pyfile* p = &s->py[s->num_py++];
  memset(p, 0, sizeof *p);
  p->path = scan_strdup(path);
  p->shown = scan_keep_path(s, shown);
  p->at = s->n;
  lang l;
  scan_source_lang(path, &l, &p->cython);
}

static kind kind_of(const char* text, int* ok, int* offered) {
  *ok = 1;
  *offered = !strcmp(text, "offered");
  if (!strcmp(text, "registration") || *offered) return REGISTRATION;
  if (!strcmp(text, "call_site")) return CALL_SITE;
  if (!strcmp(text, "typed")) return TYPED;
  if (!strcmp(text, "definition")) return DEFINITION;
  *ok = 0;
  return REGISTRATION;
}

/* A Cython function's parameters (one text, as written) into its legacy
 * form; 0 when they are none. */
static int legacy_form(finding* f, const char* params) {
  char parts[9][TEXT_CAP];
  int n = 0, depth = 0;
  size_t o = 0;
  for (const char* p = params;; p++) {
    if (*p == '\0' || (*p == ',' && depth == 0)) {
      parts[n][o] = '\0';
      while (o > 0 && parts[n][o - 1] == ' ') parts[n][--o] = '\0';
      if (parts[n][0] == '\0' && *p == '\0' && n == 0) break; /* no parameters */
      if (++n == 9 || *p == '\0') break;
      o = 0;
      continue;
    }
    depth += (*p == '(' || *p == '[') - (*p == ')' || *p == ']');
    if (o == 0 && *p == ' ') continue;
    if (o + 1 < TEXT_CAP) parts[n][o++] = *p;
  }
  return scan_legacy_form(f, parts, n, f->file);
}

/* One finding's fields into f; 0 when the record is not one. */
static int take_finding(finding* f, const pyfile* p, char** fields) {
  int ok, offered;
  memset(f, 0, sizeof *f);
  f->kind = kind_of(fields[0], &ok, &offered);
  f->offered = offered;
  f->file = p->shown;
  f->lang = LANG_PY;
  f->cython = p->cython;
  f->line = atoi(fields[1]);
  char* const text[] = {f->what,       f->name,   f->name_expr, f->function, f->module,
                        f->mapping,    f->via,    f->passed,    f->expr,     f->pattern,
                        f->name_shape, f->opaque, f->shapes};
  const size_t caps[] = {sizeof f->what,     sizeof f->name,       sizeof f->name_expr,
                         sizeof f->function, sizeof f->module,     sizeof f->mapping,
                         sizeof f->via,      sizeof f->passed,     sizeof f->expr,
                         sizeof f->pattern,  sizeof f->name_shape, sizeof f->opaque,
                         sizeof f->shapes};
  enum { TEXTS = sizeof text / sizeof *text };
  for (int i = 0; i < TEXTS; i++) scan_copy_marked(text[i], caps[i], fields[2 + i]);
  f->platform = scan_plat_parse(fields[2 + TEXTS]);
  f->version = atoi(fields[3 + TEXTS]);
  f->version_default = atoi(fields[4 + TEXTS]);
  return ok && f->line > 0;
}

/* Whether a finding stands: a definition only where its parameters are a
 * legacy form. */
static int stands(finding* f) {
  if (f->kind != DEFINITION) return 1;
  int legacy = legacy_form(f, f->expr);
  f->expr[0] = '\0'; /* (the parameters: a definition has no kernel expression) */
  return legacy;
}

/* The records into per-file lists (R), the late ones (W) and the files'
 * errors (E); how many records were not understood. */
static size_t take_records(scan* s, char* text, findings* late, findings* per_file) {
  size_t bad = 0;
  for (char* rest = text; rest && *rest;) {
    char* line = scan_line(&rest);
    char* fields[RECORD_FIELDS];
    int n = 0;
    for (char* p = line; p && n < RECORD_FIELDS;) fields[n++] = scan_field(&p);
    char* end;
    unsigned long i = n >= 2 ? strtoul(fields[1], &end, 10) : 0;
    if (n < 2 || *end || i >= s->num_py) {
      bad++;
      continue;
    }
    pyfile* p = &s->py[i];
    if (!strcmp(fields[0], "P") && n == 3) {
      p->read = 1;
      s->files++;
      s->lines += strtoul(fields[2], NULL, 10);
    } else if (!strcmp(fields[0], "E") && n == 3) {
      p->read = 1;
      fprintf(stderr, "ccshim scan: %s: %s\n", p->shown, fields[2]);
      s->errors++;
    } else if ((!strcmp(fields[0], "R") || !strcmp(fields[0], "W")) && n == RECORD_FIELDS) {
      findings* into = fields[0][0] == 'R' ? &per_file[i] : late;
      finding f;
      if (!take_finding(&f, p, fields + 2)) {
        bad++;
        continue;
      }
      if (!stands(&f)) continue;
      into->f = scan_grow(into->f, &into->cap, sizeof *into->f, into->n + 1);
      into->f[into->n++] = f;
    } else {
      bad++;
    }
  }
  return bad;
}

/* n findings of `from` (NULL when none) to all[*o]. */
static void append(finding* all, size_t* o, const finding* from, size_t n) {
  if (n == 0) return;
  memcpy(all + *o, from, n * sizeof *all);
  *o += n;
}

/* The walk's findings with each file's put at its place, then the late. */
static void merge(scan* s, const findings* per_file, const findings* late) {
  size_t total = s->n + late->n;
  for (size_t i = 0; i < s->num_py; i++) total += per_file[i].n;
  finding* all = scan_grow(NULL, &(size_t){0}, sizeof *all, total + 1);
  size_t o = 0, from = 0;
  for (size_t i = 0; i < s->num_py; i++) {
    if (s->py[i].at > from) append(all, &o, s->f + from, s->py[i].at - from);
    from = s->py[i].at;
    append(all, &o, per_file[i].f, per_file[i].n);
  }
  if (s->n > from) append(all, &o, s->f + from, s->n - from);
  append(all, &o, late->f, late->n);
  free(s->f);
  s->f = all;
  s->n = o;
  s->cap = total + 1;
}

void scan_read_python(scan* s) {
  if (s->num_py == 0) return;
  FILE* paths = tmpfile();
  char why[TEXT_CAP];
  char* text = NULL;
  snprintf(why, sizeof why, "could not start Python to read it (no temporary file)");
  if (paths != NULL) {
    for (size_t i = 0; i < s->num_py; i++) {
      fwrite(s->py[i].path, 1, strlen(s->py[i].path) + 1, paths);
      fwrite(s->py[i].shown, 1, strlen(s->py[i].shown) + 1, paths);
    }
    fflush(paths);
    text = scan_python_records("ccshim.scan", NULL, 0, paths, why, sizeof why);
    fclose(paths);
  }
  findings late = {NULL, 0, 0};
  findings* per_file = calloc(s->num_py, sizeof *per_file);
  if (per_file == NULL) {
    fprintf(stderr, "ccshim scan: out of memory for %zu Python files\n", s->num_py);
    exit(2);
  }
  size_t bad = text ? take_records(s, text, &late, per_file) : 0;
  if (bad) {
    fprintf(stderr,
            "ccshim scan: %zu record%s from ccshim.scan not understood (docs/contracts.md, "
            "section 4)\n",
            bad, bad == 1 ? "" : "s");
    s->errors++;
  }
  merge(s, per_file, &late);
  for (size_t i = 0; i < s->num_py; i++) {
    if (!s->py[i].read) {
      fprintf(stderr, "ccshim scan: %s: a %s file, not read: %s\n", s->py[i].shown,
              s->py[i].cython ? "Cython" : "Python", why);
      s->errors++;
    }
    free(per_file[i].f);
    free(s->py[i].path);
  }
  free(per_file);
  free(late.f);
  free(text);
  free(s->py);
  s->py = NULL;
  s->num_py = s->py_cap = 0;
}
