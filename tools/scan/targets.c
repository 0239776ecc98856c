/*
 * Findings joined per target name: the form and version each target
 * resolves to, how that is known, and the line that wraps it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scan.h"

/* --- Targets ------------------------------------------------------------------------------ */

/* The target of that name (and module platform); a computed name is a
 * target of its own. */
static target* target_on(inventory* inv, const char* name, int computed, plat module_platform) {
  for (size_t i = 0; i < inv->n && !computed; i++)
    if (!inv->t[i].computed && !strcmp(inv->t[i].name, name) &&
        inv->t[i].module_platform == module_platform)
      return &inv->t[i];
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
  t->module_platform = module_platform;
  return t;
}

/* The target of that name, whichever platform; a new one when none. */
static target* target_named(inventory* inv, const char* name, int computed) {
  for (size_t i = 0; i < inv->n && !computed; i++)
    if (!inv->t[i].computed && !strcmp(inv->t[i].name, name)) return &inv->t[i];
  return target_on(inv, name, computed, PLAT_UNKNOWN);
}

/* The platform an extension module's capsules are registered for: from a
 * Python loop over its registrations() that names the platform
 * (register_custom_call_target(name, capsule, platform="gpu")). */
static plat module_platform_of(const scan* s, const char* module) {
  if (module[0] == '\0') return PLAT_UNKNOWN;
  for (size_t i = 0; i < s->n; i++) {
    const finding* f = &s->f[i];
    if (f->kind == REGISTRATION && !f->offered && !strcmp(f->module, module) &&
        f->platform != PLAT_UNKNOWN)
      return f->platform;
  }
  return PLAT_UNKNOWN;
}

/* Whether `name` is offered by modules registered for different platforms
 * (a CPU, a CUDA and a SYCL module of one project): then each gets a target
 * of its own. */
static int split_by_module(const scan* s, const char* name) {
  plat first = PLAT_UNKNOWN;
  for (size_t i = 0; i < s->n; i++) {
    const finding* f = &s->f[i];
    if (f->kind != REGISTRATION || !f->offered || strcmp(f->name, name)) continue;
    plat p = module_platform_of(s, f->module);
    if (p == PLAT_UNKNOWN) continue;
    if (first != PLAT_UNKNOWN && p != first) return 1;
    first = p;
  }
  return 0;
}

/* The registration of a computed name that loops over a module's mapping
 * (`for name, fn in mod.custom_call_targets.items():`), or NULL. */
static const finding* mapping_loop_of(const target* t) {
  for (int i = 0; i < t->num_reg; i++)
    if (!t->reg[i]->offered && t->reg[i]->module[0] && strcmp(t->reg[i]->mapping, "getattr"))
      return t->reg[i];
  return NULL;
}

/* The definition of a registered function: the one in the same scope
 * (Getrf<float>::Kernel is defined as Getrf<T>::Kernel), else one where
 * either side names no scope (a namespace written around the definition).
 * For a registration of a known platform, only a definition of that
 * platform's forms (a CPU and a GPU module may each have a `nufft2d1`). */
static const finding* definition_of(const scan* s, const char* function, const char* scope,
                                    plat platform) {
  if (function[0] == '\0') return NULL;
  const finding* loose = NULL;
  for (size_t i = 0; i < s->n; i++) {
    const finding* d = &s->f[i];
    if (d->kind != DEFINITION || strcmp(d->function, function)) continue;
    int gpu_form = d->form == CCSHIM_FORM_GPU_V1 || d->form == CCSHIM_FORM_GPU_V23;
    if ((platform == PLAT_CPU && gpu_form) ||
        (scan_is_gpu(platform) && !gpu_form &&
         d->form != CCSHIM_FORM_CPU_V3)) /* CPU v3 = GPU v2/v3 */
      continue;
    if (!strcmp(d->scope, scope)) return d;
    if (!loose && (!scope[0] || !d->scope[0])) loose = d;
  }
  return loose;
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
/* The notes a target's report carries: conflicts worth a person's look,
 * and what was not found. */
static void add_notes(target* t, const finding* d, int def_version, plat def_platform) {
  /* Conflicts worth a person's look. */
  if (d && t->version) {
    int fits = t->form == CCSHIM_FORM_GPU_V23 ? t->version >= 2 : def_version == t->version;
    /* A v1 kernel called as v2 or v3 is given arguments after the ones it
     * declares, which it never reads. */
    int prefix = !fits && def_version == 1 && t->version > 1 &&
                 (t->form == CCSHIM_FORM_GPU_V1 || t->version == 2);
    if (prefix)
      appendf(t->note, sizeof t->note,
              "defined with %s parameters (%s:%d) but called with api_version %d: XLA calls a "
              "kernel by the call's version, so it passes arguments the kernel does not "
              "read, which is harmless; wrap it with api_version=%d, as the call says. ",
              ccshim_legacy_form_text(t->form), d->file, d->line, t->version, t->version);
    else if (!fits)
      appendf(t->note, sizeof t->note,
              "the call says version %d but %s:%d has %s parameters; XLA would pass the "
              "wrong arguments. ",
              t->version, d->file, d->line, ccshim_legacy_form_text(t->form));
    if (t->platform != PLAT_UNKNOWN && scan_is_gpu(t->platform) != scan_is_gpu(def_platform))
      appendf(t->note, sizeof t->note, "registered for %s but %s:%d has %s parameters. ",
              scan_plat_text(t->platform), d->file, d->line, ccshim_legacy_form_text(t->form));
  }
  /* One name in two extensions' registrations() (a CPU and a GPU module,
   * say): one entry here, but two kernels to wrap. */
  for (int i = 1; i < t->num_reg; i++)
    for (int j = 0; j < i; j++)
      if (t->reg[i]->offered && t->reg[j]->offered && t->reg[i]->module[0] &&
          t->reg[j]->module[0] && strcmp(t->reg[i]->module, t->reg[j]->module)) {
        appendf(t->note, sizeof t->note,
                "also in %s.%s (%s:%d) under the same name: a second kernel, for that "
                "extension's platform; wrap it with its own mapping. ",
                t->reg[i]->module, t->reg[i]->mapping, t->reg[i]->file, t->reg[i]->line);
        j = i; /* once per registration */
      }
  const finding* loop = mapping_loop_of(t);
  if (t->computed && loop)
    appendf(t->note, sizeof t->note,
            "registers every entry of %s.%s: the entries are listed where the extension "
            "fills it, each a target; the wrap line takes the whole mapping and leaves its "
            "typed-FFI entries out. ",
            loop->module, loop->mapping);
  else if (t->instance)
    appendf(t->note, sizeof t->note,
            "registered once per object, under a name built from id() (%s): one target an "
            "instance, every one with this kernel; the wrap line, in place of the "
            "registration (%s:%d), registers each instance's through ccshim. ",
            t->instance->pattern, t->instance->file, t->instance->line);
  else if (t->computed && scan_name_shape(t)[0])
    appendf(t->note, sizeof t->note,
            "the name is computed at run time (%s): its call sites are joined by the "
            "expression that names it. ",
            scan_name_shape(t));
  else if (t->computed)
    appendf(t->note, sizeof t->note,
            "the name is computed at run time, so no definition or call site is matched "
            "to it. ");
  else if (t->candidate)
    appendf(t->note, sizeof t->note,
            "legacy parameters, but nothing in the tree registers or calls it: a candidate, "
            "not a target. ");
  else if (t->num_reg == 0)
    appendf(t->note, sizeof t->note, "no registration found in the tree. ");
  for (int i = 0; i < t->num_reg; i++)
    if (t->reg[i]->via[0]) {
      appendf(t->note, sizeof t->note, "named by %s. ", t->reg[i]->via);
      break;
    }
  for (int i = 0; i < t->num_reg; i++)
    if (t->reg[i]->offered && !strcmp(t->reg[i]->what, "m.def") && t->num_reg > 1 && !t->instance) {
      appendf(t->note, sizeof t->note,
              "its kernel is taken by a computed getattr of %s: joined to %s.%s (%s:%d), the "
              "module's function whose name ends the target's. ",
              t->reg[i]->module, t->reg[i]->module, t->reg[i]->mapping, t->reg[i]->file,
              t->reg[i]->line);
      break;
    }
  if (t->platform == PLAT_SYCL)
    appendf(t->note, sizeof t->note,
            "a SYCL (Intel XPU) kernel: ccshim wraps CPU, CUDA and ROCm kernels, not SYCL "
            "ones. ");
  if (d && d->cxx_linkage)
    appendf(t->note, sizeof t->note,
            "C++ linkage: give it extern \"C\" to load it by name, or pass its capsule. ");
}

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
  if (t->module_platform != PLAT_UNKNOWN) t->platform = t->module_platform;
  for (int i = 0; i < t->num_reg; i++) {
    if (t->platform == PLAT_UNKNOWN) t->platform = t->reg[i]->platform;
    gpu_registration |= scan_is_gpu(t->reg[i]->platform);
  }
  gpu_registration |= scan_is_gpu(t->module_platform);
  /* (void*, void**, const char*, size_t, status*) is the CPU v3 form, and
   * also the GPU v2/v3 form with the stream taken as void*: a GPU
   * registration, or a call site saying 2, tells which. */
  t->form = d ? d->form : CCSHIM_FORM_NONE;
  plat def_platform = d ? d->platform : PLAT_UNKNOWN;
  int void_stream = t->form == CCSHIM_FORM_CPU_V3 &&
                    (gpu_registration || (explicit_call && explicit_call->version == 2));
  if (void_stream) {
    t->form = CCSHIM_FORM_GPU_V23;
    def_platform = PLAT_GPU;
  }
  /* CPU v3's parameters are GPU v2/v3's with the stream as a void*: with
   * nothing else to say which (a capsule a module offers, registered outside
   * the tree), the platform stays unknown. */
  int ambiguous = t->platform == PLAT_UNKNOWN && t->form == CCSHIM_FORM_CPU_V3 &&
                  t->num_call == 0 && !void_stream;
  if (t->platform == PLAT_UNKNOWN && !ambiguous) t->platform = def_platform;
  if (ambiguous)
    appendf(t->note, sizeof t->note,
            "(void*, void**, const char*, size_t, XlaCustomCallStatus*) is CPU v3 and also "
            "GPU v2/v3 with the stream as a void*, and nothing in the tree registers or calls "
            "it: the platform it is registered for says which. ");
  /* An exported program knows the platform it was lowered for. */
  for (int i = 0; i < t->num_call && t->platform == PLAT_UNKNOWN; i++)
    if (scan_in_program(t->call[i])) t->platform = t->call[i]->platform;
  int def_version = t->form == CCSHIM_FORM_CPU_V1 || t->form == CCSHIM_FORM_GPU_V1 ? 1
                    : t->form == CCSHIM_FORM_CPU_V2                                ? 2
                    : t->form == CCSHIM_FORM_CPU_V3                                ? 3
                                                                                   : 0;
  if (explicit_call && scan_in_program(explicit_call)) {
    t->version = explicit_call->version;
    set_how(t, "api_version=%d in the exported program %s", t->version, explicit_call->file);
  } else if (explicit_call) {
    t->version = explicit_call->version;
    set_how(t, "api_version=%d at the call site %s:%d", t->version, explicit_call->file,
            explicit_call->line);
  } else if (default_call && !scan_in_program(default_call) && def_version &&
             default_call->version != def_version) {
    /* XLA calls by the call's version, whatever the definition declares. */
    t->version = default_call->version;
    set_how(t,
            "the default of %s at %s:%d (no api_version given; the definition's "
            "parameters are %s, but XLA calls by the call's version)",
            default_call->what, default_call->file, default_call->line,
            ccshim_legacy_form_text(t->form));
  } else if (def_version) {
    t->version = def_version;
    set_how(t, "the definition's parameters (%s)", ccshim_legacy_form_text(t->form));
  } else if (default_call) {
    t->version = default_call->version;
    set_how(t, "the default of %s at %s:%d (no api_version given)", default_call->what,
            default_call->file, default_call->line);
  } else if (t->form == CCSHIM_FORM_GPU_V23) {
    t->version = 2;
    set_how(t, "the definition's parameters (GPU v2/v3: the same on GPU; no call site says which)");
  } else {
    set_how(t, "unknown: no definition or call site found");
  }
  if (void_stream) {
    char* base = t->how;
    t->how = NULL;
    set_how(t, "%s; its first parameter, a void*, is the GPU stream", base);
    free(base);
  }
  add_notes(t, d, def_version, def_platform);
  size_t len = strlen(t->note);
  if (len && t->note[len - 1] == ' ') t->note[len - 1] = '\0';
}

/* The module function (m.def) of `module` with the longest name that ends
 * `name` at a word boundary, or NULL. */
static const finding* module_function_ending(const scan* s, const char* module, const char* name) {
  const finding* best = NULL;
  size_t best_len = 0, nl = strlen(name);
  for (size_t i = 0; i < s->n; i++) {
    const finding* f = &s->f[i];
    if (f->kind != REGISTRATION || !f->offered || strcmp(f->what, "m.def") ||
        strcmp(f->module, module))
      continue;
    size_t al = strlen(f->mapping) - 2; /* "factor_rev()" */
    if (al == 0 || al > nl || strncmp(name + nl - al, f->mapping, al) != 0) continue;
    if (al < nl && name[nl - al - 1] != '_') continue;
    if (al > best_len) {
      best = f;
      best_len = al;
    }
  }
  return best;
}

/* The module function a registration takes its kernel from by a computed
 * getattr: celerite2 registers "celerite2_factor" with getattr(xla_ops,
 * spec["name"])() and "celerite2_factor" + "_rev" with getattr(xla_ops,
 * f"{spec['name']}_rev")().  The function that the passed name ends with
 * (factor), with the registration's suffix after it (factor_rev); NULL when
 * the module has no such function (then getattr would raise: the
 * registration is on a path that does not run, general_matmul_lower having
 * no _rev). */
static const finding* offered_by_getattr(const scan* s, const finding* reg) {
  const char* passed = reg->passed[0] ? reg->passed : reg->name;
  const finding* base = module_function_ending(s, reg->module, passed);
  if (base == NULL) return NULL;
  char want[2 * NAME_CAP];
  snprintf(want, sizeof want, "%.*s%s()", (int)strlen(base->mapping) - 2, base->mapping,
           reg->name + strlen(passed));
  for (size_t i = 0; i < s->n; i++) {
    const finding* f = &s->f[i];
    if (f->kind == REGISTRATION && f->offered && !strcmp(f->what, "m.def") &&
        !strcmp(f->module, reg->module) && !strcmp(f->mapping, want))
      return f;
  }
  return NULL;
}

/* The method a kernel expression ends by calling (self.compiled.capsule()
 * gives "capsule"); 0 when it ends otherwise. */
static int method_called(const char* expr, char* method, size_t cap) {
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

/* The capsule a per-object registration takes from a method of its object
 * (self.compiled.capsule()): the one module function of that name that
 * offers a capsule (a pybind11 class's .def lambda), or NULL when none or
 * several do. */
const char* scan_name_shape(const target* t) {
  for (int i = 0; i < t->num_reg; i++)
    if (t->reg[i]->name_shape[0]) return t->reg[i]->name_shape;
  return "";
}

static const finding* offered_by_method(const scan* s, const finding* reg) {
  char method[NAME_CAP], want[NAME_CAP + 2];
  if (!method_called(reg->expr, method, sizeof method)) return NULL;
  snprintf(want, sizeof want, "%s()", method);
  const finding* found = NULL;
  for (size_t i = 0; i < s->n; i++) {
    const finding* f = &s->f[i];
    if (f->kind != REGISTRATION || !f->offered || strcmp(f->what, "m.def") ||
        strcmp(f->mapping, want))
      continue;
    if (found) return NULL;
    found = f;
  }
  return found;
}

static void add_reg(target* t, const finding* f) {
  for (int i = 0; i < t->num_reg; i++)
    if (t->reg[i] == f) return;
  if (t->num_reg < 8) t->reg[t->num_reg++] = f;
}

static int reached(const inventory* inv, const finding* f) {
  for (size_t k = 0; k < inv->n; k++) {
    if (inv->t[k].def == f) return 1;
    for (int i = 0; i < inv->t[k].num_reg; i++)
      if (inv->t[k].reg[i] == f) return 1;
  }
  return 0;
}

static void join_registrations(const scan* s, inventory* inv) {
  for (size_t i = 0; i < s->n; i++) {
    const finding* f = &s->f[i];
    if (f->kind != REGISTRATION || (f->offered && !f->name[0])) continue; /* m.def: below */
    int by_getattr = !f->offered && !strcmp(f->mapping, "getattr") && f->name[0];
    const finding* m = by_getattr ? offered_by_getattr(s, f) : NULL;
    if (by_getattr && m == NULL && f->via[0]) continue; /* a path that cannot run */
    plat by_module = f->offered && f->name[0] && split_by_module(s, f->name)
                         ? module_platform_of(s, f->module)
                         : PLAT_UNKNOWN;
    target* t = f->name[0] || !f->name_expr[0]
                    ? target_on(inv, f->name[0] ? f->name : f->function, 0, by_module)
                    : target_named(inv, f->name_expr, 1);
    add_reg(t, f);
    if (f->pattern[0]) {
      t->instance = f;
      m = offered_by_method(s, f);
    }
    if (m) {
      add_reg(t, m);
      if (!t->def) t->def = definition_of(s, m->function, m->scope, by_module);
    }
    if (!t->def) t->def = definition_of(s, f->function, f->scope, by_module);
  }
  /* A module function offering a capsule that no registration in the tree
   * reaches: a target by the function's name. */
  for (size_t i = 0; i < s->n; i++) {
    const finding* f = &s->f[i];
    if (f->kind != REGISTRATION || !f->offered || f->name[0] || reached(inv, f)) continue;
    char attr[NAME_CAP];
    snprintf(attr, sizeof attr, "%.*s", (int)strlen(f->mapping) - 2, f->mapping);
    target* t = target_on(inv, attr, 0, PLAT_UNKNOWN);
    add_reg(t, f);
    if (!t->def) t->def = definition_of(s, f->function, f->scope, PLAT_UNKNOWN);
  }
}

/* Whether a call site joins target t: by its literal name (the CPU, CUDA
 * and SYCL kernels of one name), or, its name computed, as one of the
 * targets named through a function's parameter in its file (celerite2
 * registers and lowers in one file). */
static int joins(const finding* f, const target* t) {
  if (f->name[0] || !f->name_expr[0]) return !t->computed && !strcmp(t->name, f->name);
  for (int r = 0; r < t->num_reg; r++)
    if (t->reg[r]->file == f->file &&
        (t->reg[r]->via[0] || ((t->reg[r]->pattern[0] || t->reg[r]->name_shape[0]) &&
                               !strcmp(t->reg[r]->name_expr, f->name_expr))))
      return 1;
  return 0;
}

/* Whether another of the names a call site's computed name takes there
 * (the Python reader's findings of one site, `via` set) joined a target. */
static int sibling_joined(const scan* s, size_t i, const unsigned char* joined) {
  const finding* f = &s->f[i];
  for (size_t j = 0; j < s->n; j++)
    if (j != i && joined[j] && s->f[j].kind == CALL_SITE && s->f[j].via[0] &&
        s->f[j].file == f->file && s->f[j].line == f->line && !strcmp(s->f[j].what, f->what))
      return 1;
  return 0;
}

/* Call sites, each joined to the targets it serves, else a target of its
 * own; but a name the site's computed name takes that no target has
 * (celerite2's _rev names for the ops it registers no reverse of) is no
 * target where another of its names is one. */
static void join_call_sites(const scan* s, inventory* inv) {
  size_t cap = 0; /* scan_grow: the scan's one way out of no memory */
  unsigned char* joined = scan_grow(NULL, &cap, 1, s->n ? s->n : 1);
  memset(joined, 0, cap);
  for (size_t i = 0; i < s->n; i++) {
    const finding* f = &s->f[i];
    if (f->kind != CALL_SITE) continue;
    for (size_t k = 0; k < inv->n; k++) {
      target* t = &inv->t[k];
      if (!joins(f, t)) continue;
      if (t->num_call < 8) t->call[t->num_call++] = f;
      joined[i] = 1;
    }
  }
  for (size_t i = 0; i < s->n; i++) {
    const finding* f = &s->f[i];
    if (f->kind != CALL_SITE || joined[i] || (f->via[0] && sibling_joined(s, i, joined))) continue;
    target* t = f->name[0] || !f->name_expr[0] ? target_named(inv, f->name, 0)
                                               : target_named(inv, f->name_expr, 1);
    if (t->num_call < 8) t->call[t->num_call++] = f;
  }
  free(joined);
}

void scan_build(const scan* s, inventory* inv) {
  join_registrations(s, inv);
  join_call_sites(s, inv);
  /* Definitions not reached through a registration: the target of the
   * function's name, when a call site names it; else a candidate, listed
   * apart (a member function named like a kernel is not a target). */
  for (size_t i = 0; i < s->n; i++) {
    const finding* f = &s->f[i];
    if (f->kind != DEFINITION || reached(inv, f)) continue;
    target* t = NULL;
    for (size_t k = 0; k < inv->n && t == NULL; k++)
      if (!inv->t[k].computed && !inv->t[k].def && !strcmp(inv->t[k].name, f->function))
        t = &inv->t[k];
    if (t == NULL) {
      char name[2 * NAME_CAP + 2];
      snprintf(name, sizeof name, "%s%s%s", f->scope, f->scope[0] ? "::" : "", f->function);
      t = target_named(inv, name, 1);
      t->computed = 0;
      t->candidate = 1;
    }
    t->def = f;
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

/* The capsule a module offers for the target: the one whose function is
 * the target's definition (a CPU and a GPU module may offer one name). */
static const finding* offered_of(const target* t) {
  const finding* c = NULL;
  for (int i = 0; i < t->num_reg; i++) {
    const finding* r = t->reg[i];
    if (!r->offered) continue;
    if (c == NULL || (t->def && !strcmp(r->function, t->def->function))) c = r;
  }
  return c;
}

/* The kernel as Python reaches it, into out. */
static void kernel_code(const target* t, const char* name, char* out, size_t cap) {
  const finding* py = NULL;
  for (int i = 0; i < t->num_reg && py == NULL; i++)
    if (t->reg[i]->lang == LANG_PY && !t->reg[i]->offered && t->reg[i]->expr[0]) py = t->reg[i];
  const finding* offered = offered_of(t);
  int py_plain = py && !(py->cython && py->expr[0] == '<') && strcmp(py->mapping, "getattr");
  const char* fn = function_name(t);
  if (py_plain)
    snprintf(out, cap, "%s", py->expr);
  else if (offered && !strcmp(offered->what, "m.def"))
    snprintf(out, cap, "%s.%s", offered->module[0] ? offered->module : "<extension>",
             offered->mapping);
  else if (offered)
    snprintf(out, cap, "%s.%s[%s]", offered->module[0] ? offered->module : "<extension>",
             offered->mapping, name);
  else if (py && py->cython && py->expr[0] == '<') /* Cython, in the .pyx */
    snprintf(out, cap, "<uintptr_t>%s", py->expr);
  else if (py)
    snprintf(out, cap, "%s", py->expr);
  else if (fn[0])
    snprintf(out, cap, "(\"<your library>.so\", \"%s\")", fn);
  else
    snprintf(out, cap, "<the kernel>");
}

const char* scan_wrap_cython_file(const target* t) {
  const finding* py = NULL;
  for (int i = 0; i < t->num_reg && py == NULL; i++)
    if (t->reg[i]->lang == LANG_PY && !t->reg[i]->offered && t->reg[i]->expr[0]) py = t->reg[i];
  if (py == NULL || !py->cython || offered_of(t)) return NULL;
  return py->file;
}

/* The Python line: the kernel as the Python registration had it, else as
 * its module offers it (an entry of its dict, a function returning the
 * capsule), else by symbol from the library.  A Cython kernel registered
 * only by its address is a line of Cython, for the .pyx. */
void scan_wrap_line(const target* t, char* out, size_t cap) {
  char name[TEXT_CAP + 2], kernel[TEXT_CAP + 2 * NAME_CAP + 64], version[16];
  name_code(t, name, sizeof name);
  snprintf(version, sizeof version, "%d", t->version);
  const char* platform = t->platform == PLAT_UNKNOWN ? "cpu" : scan_plat_text(t->platform);
  const char* v = t->version ? version : "<1, 2 or 3>";
  if (t->platform == PLAT_SYCL) {
    snprintf(out, cap, "# not wrapped: ccshim has no SYCL platform (%s stays on the legacy path)",
             name);
    return;
  }
  const finding* loop = mapping_loop_of(t);
  if (t->computed && loop) {
    snprintf(out, cap, "ccshim.jax.register_legacy(%s.%s, platform=\"%s\", api_version=%s)",
             loop->module, loop->mapping, platform, v);
    return;
  }
  kernel_code(t, name, kernel, sizeof kernel);
  snprintf(out, cap, "ccshim.jax.register_legacy(%s, %s, platform=\"%s\", api_version=%s)", name,
           kernel, platform, v);
}

/* The C line: the function as the C registration named it. */
void scan_wrap_line_c(const target* t, char* out, size_t cap) {
  const finding* c = registration_in(t, LANG_C);
  const char* fn = function_name(t);
  /* As the registration wrote it (Getrf<float>::Kernel), unless a cast to
   * void* is part of that. */
  if (c && !strstr(c->expr, "_cast<") && !strstr(c->expr, "(void")) fn = c->expr;
  char version[16];
  snprintf(version, sizeof version, "%d", t->version);
  snprintf(out, cap, "ccshim_wrap((ccshim_legacy_fn)%s, %s, %s, NULL, NULL, &adapter)",
           fn[0] ? fn : "<the kernel>", t->version ? version : "<1, 2 or 3>",
           t->platform == PLAT_ROCM   ? "CCSHIM_PLATFORM_ROCM"
           : scan_is_gpu(t->platform) ? "CCSHIM_PLATFORM_CUDA"
                                      : "CCSHIM_PLATFORM_HOST");
}

void scan_call_change(const target* t, char* out, size_t cap) {
  /* A call in source code, else the exported program's rewrite. */
  const finding* c = NULL;
  for (int i = 0; i < t->num_call && c == NULL; i++)
    if (!scan_in_program(t->call[i])) c = t->call[i];
  if (c == NULL && t->num_call) {
    char* line = scan_rewrite_line(t->call[0]->file);
    scan_copy_marked(out, cap, line);
    free(line);
    return;
  }
  char opaque[TEXT_CAP + 16] = "", name[TEXT_CAP + 2];
  name_code(t, name, sizeof name);
  if (c && c->opaque[0] && strcmp(c->opaque, "\"\"") != 0 && strcmp(c->opaque, "b\"\"") != 0)
    snprintf(opaque, sizeof opaque, ", opaque=%s", c->opaque);
  snprintf(out, cap, "ccshim.jax.legacy_call(%s, %s%s)(*operands)", name,
           c && c->shapes[0] ? c->shapes : "result_shape_dtypes", opaque);
}
