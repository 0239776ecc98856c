/*
 * Registrations through a function of the project's own, called from other
 * files.  brainevent 0.0.5 registers every kernel through
 *
 *     def register_custom_call(target_name, capsule, backend: str):
 *         if jax.__version_info__ < (0, 4, 35):
 *             xla_client.register_custom_call_target(target_name, capsule, backend)
 *         ...
 *
 * and calls it from another module with a name computed at run time
 * (`target_name = f'brainevent_numba_call_{xla_c_rule.address}'`).  The
 * first walk records such a function (pystruct.c finds the parameter); when
 * the walk is over, a second one over the tree's Python files makes each
 * call of it a registration at the call, named by what the call passes
 * (its literal, or the shape of what computes it), with its kernel and
 * platform from the call's arguments where they come in as parameters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scan.h"

static int index_of(char names[][NAME_CAP], int n, const char* expr) {
  for (int i = 0; i < n; i++)
    if (names[i][0] && !strcmp(names[i], expr)) return i;
  return -1;
}

void scan_wrapper_pending(scan* s, const char* fn, char names[][NAME_CAP], int n, int index,
                          const char* suffix, const finding* reg, const char* platform_expr,
                          const char* literals_in) {
  for (size_t i = 0; i < s->num_wraps; i++) {
    wrapper* w = &s->wraps[i];
    if (strcmp(w->fn, fn) != 0 || w->index != index) continue;
    if (literals_in) w->literals_in = literals_in;
    /* Another branch of the same function (one per JAX release). */
    if (w->num < 4) {
      w->files[w->num] = reg->file;
      w->lines[w->num++] = reg->line;
    }
    return;
  }
  s->wraps = scan_grow(s->wraps, &s->wraps_cap, sizeof *s->wraps, s->num_wraps + 1);
  wrapper* w = &s->wraps[s->num_wraps++];
  memset(w, 0, sizeof *w);
  snprintf(w->fn, sizeof w->fn, "%s", fn);
  snprintf(w->param, sizeof w->param, "%s", names[index]);
  w->index = index;
  snprintf(w->suffix, sizeof w->suffix, "%s", suffix);
  w->kernel_index = index_of(names, n, reg->expr);
  w->platform_index = index_of(names, n, platform_expr);
  /* Each equal to a parameter's name, so shorter than NAME_CAP. */
  if (w->kernel_index >= 0) snprintf(w->kernel_param, NAME_CAP, "%.*s", NAME_CAP - 1, reg->expr);
  if (w->platform_index >= 0)
    snprintf(w->platform_param, NAME_CAP, "%.*s", NAME_CAP - 1, platform_expr);
  w->reg = *reg;
  w->files[0] = reg->file;
  w->lines[0] = reg->line;
  w->num = 1;
  w->literals_in = literals_in;
}

/* The argument a call passes for a parameter: by keyword or by position. */
static int argument(const source* src, const args* a, const char* param, int index, size_t* b,
                    size_t* e) {
  if (param[0] && scan_keyword(src, a, param, b, e)) return 1;
  int i = index >= 0 ? scan_positional(src, a, index) : -1;
  if (i < 0) return 0;
  *b = a->begin[i];
  *e = a->end[i];
  return 1;
}

/* The path string the first walk kept for this file, so that findings of
 * both walks in one file compare equal by pointer (targets.c does). */
static const char* first_path(const scan* s, const char* path) {
  for (size_t i = 0; i < s->num_paths; i++)
    if (!strcmp(s->paths[i], path)) return s->paths[i];
  return path;
}

/* One call of a wrapper: a registration at the call. */
static void wrapper_call(scan* s, const source* src, wrapper* w, size_t at, size_t open) {
  size_t close = scan_closing(src, open);
  if (close >= src->len) return;
  args a;
  scan_split_args(src, open, close, &a);
  size_t b, e;
  char literal[NAME_CAP];
  if (!argument(src, &a, w->param, w->index, &b, &e)) return;
  int is_literal = scan_literal(src, b, e, literal, sizeof literal);
  if (is_literal && w->literals_in && !strcmp(w->literals_in, src->path)) return; /* made */
  finding* f = scan_add(s, REGISTRATION, src, scan_line_of(src, at), w->fn);
  finding at_call = *f;
  *f = w->reg;
  f->file = first_path(s, at_call.file);
  f->line = at_call.line;
  f->lang = at_call.lang;
  f->cython = at_call.cython;
  snprintf(f->what, sizeof f->what, "%s", w->fn);
  f->name[0] = f->name_expr[0] = f->pattern[0] = f->name_shape[0] = f->passed[0] = '\0';
  if (is_literal) {
    if (snprintf(f->name, sizeof f->name, "%s%s", literal, w->suffix) >= (int)sizeof f->name)
      return; /* no target has a name that long */
    snprintf(f->passed, sizeof f->passed, "%s", literal);
  } else {
    scan_text_of(src, b, e, f->name_expr, sizeof f->name_expr);
    scan_py_instance_name(src, at, f->name_expr, f->pattern, f->name_shape, sizeof f->pattern);
  }
  if (w->kernel_index >= 0 && argument(src, &a, w->kernel_param, w->kernel_index, &b, &e)) {
    scan_text_of(src, b, e, f->expr, sizeof f->expr);
    scan_function_of(src, b, e, f->function, sizeof f->function);
  }
  if (w->platform_index >= 0) {
    f->platform = PLAT_UNKNOWN;
    if (argument(src, &a, w->platform_param, w->platform_index, &b, &e) &&
        scan_literal(src, b, e, literal, sizeof literal))
      f->platform = scan_plat_parse(literal);
  }
  if (snprintf(f->via, sizeof f->via, "%s (%s:%d), which registers the name passed in as %s", w->fn,
               w->reg.file, w->reg.line, w->param) >= (int)sizeof f->via)
    memcpy(f->via + sizeof f->via - 4, "...", 4);
  w->made++;
}

void scan_wrapper_calls(scan* s, const source* src) {
  if (src->lang != LANG_PY) return;
  for (size_t i = 0; i < s->num_wraps; i++) {
    size_t at, open; /* module.fn( too: another module's function */
    for (size_t from = 0; (open = scan_py_next_call(src, s->wraps[i].fn, from, 1, &at)) < src->len;
         from = open)
      wrapper_call(s, src, &s->wraps[i], at, open);
  }
}

/* After the first walk: the second, and the registrations inside each
 * wrapper that calls now stand for dropped. */
void scan_wrappers_resolve(scan* s, const char* dir) {
  if (s->num_wraps == 0) return;
  s->second_walk = 1;
  scan_walk(s, dir);
  s->second_walk = 0;
  size_t kept = 0;
  for (size_t i = 0; i < s->n; i++) {
    const finding* f = &s->f[i];
    int dropped = 0;
    for (size_t k = 0; k < s->num_wraps && !dropped && f->kind == REGISTRATION; k++) {
      const wrapper* w = &s->wraps[k];
      for (int r = 0; r < w->num && w->made && !dropped; r++)
        dropped = f->line == w->lines[r] && !strcmp(f->file, w->files[r]) && !f->via[0];
    }
    if (!dropped) s->f[kept++] = *f;
  }
  s->n = kept;
  free(s->wraps);
  s->wraps = NULL;
  s->num_wraps = s->wraps_cap = 0;
}
