/* conform: the options table (which --help reads too), a target's words,
 * and a manifest line split into words. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"

/* --- Arguments and manifests -------------------------------------------------------- */

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Frees what parsing a target allocated. */
void conform_target_reset(target* t) {
  free(t->opaque);
  for (int f = 0; f < t->num_fixed; f++) free(t->fixed[f].bytes);
  free(t->lib);
  free(t->symbol);
  free(t->signature);
  free(t->against_lib);
  free(t->against_symbol);
  free(t->against_python);
  free(t->against_name);
  free(t->against_path);
  free(t->python);
  free(t->init);
  free(t->python_path);
  for (int k = 0; k < t->num_arg_from; k++) free(t->arg_from[k]);
  memset(t, 0, sizeof *t);
}

/* A library path as conform loads it: relative to the manifest's folder
 * when one is given, and a bare name as a file here, not a search. */
static char* library_path(const char* base_dir, const char* v, size_t n) {
  if (v[0] != '/' && base_dir != NULL) return conform_format("%s/%.*s", base_dir, (int)n, v);
  if (memchr(v, '/', n) == NULL) return conform_format("./%.*s", (int)n, v);
  return conform_format("%.*s", (int)n, v);
}

/* Decodes hex digits into a new buffer (*out, owned by the caller). */
static int hex_bytes(const char* opt, const char* v, unsigned char** out, size_t* len, char* err,
                     size_t cap) {
  size_t n = strlen(v);
  if (n % 2) {
    snprintf(err, cap, "%s: an even number of hex digits expected, got %zu", opt, n);
    return -1;
  }
  *out = malloc(n / 2 + 1);
  if (*out == NULL) {
    snprintf(err, cap, "%s: out of memory for %zu bytes", opt, n / 2);
    return -1;
  }
  for (size_t k = 0; k < n / 2; k++) {
    int hi = hex_value(v[2 * k]), lo = hex_value(v[2 * k + 1]);
    if (hi < 0 || lo < 0) {
      snprintf(err, cap, "%s: '%c%c' at %zu is not hex", opt, v[2 * k], v[2 * k + 1], 2 * k);
      free(*out);
      *out = NULL;
      return -1;
    }
    (*out)[k] = (unsigned char)(hi << 4 | lo);
  }
  *len = n / 2;
  return 0;
}

/* An integer option within [lo, hi]; 0, or -1 with a one-line error. */
static int integer(const char* opt, const char* v, long lo, long hi, int* out, char* err,
                   size_t cap) {
  char* end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || end == v || *end || n < lo || n > hi) {
    snprintf(err, cap, "%s %s: expected an integer from %ld to %ld", opt, v, lo, hi);
    return -1;
  }
  *out = (int)n;
  return 0;
}

/* NAME=TYPE:VALUE, NAME=TYPE[]:V1,V2,..., or NAME=str:TEXT. */
static int parse_attr(const char* v, attr* a, char* err, size_t cap) {
  memset(a, 0, sizeof *a);
  const char* eq = strchr(v, '=');
  const char* colon = eq ? strchr(eq, ':') : NULL;
  if (eq != NULL && (size_t)(eq - v) >= sizeof a->name) {
    snprintf(err, cap, "--attr: the name is %zu bytes; at most %zu", (size_t)(eq - v),
             sizeof a->name - 1);
    return -1;
  }
  if (eq == NULL || colon == NULL || eq == v) {
    snprintf(err, cap, "--attr %s: expected NAME=TYPE:VALUE, e.g. lo=f32:0.5 or dims=s64[]:2,3", v);
    return -1;
  }
  memcpy(a->name, v, (size_t)(eq - v));
  const char* type = eq + 1;
  size_t tlen = (size_t)(colon - type);
  const char* value = colon + 1;
  if (tlen == 3 && !strncmp(type, "str", 3)) {
    a->dtype = XLA_FFI_DataType_INVALID;
    if (strlen(value) >= sizeof a->text) {
      snprintf(err, cap, "--attr %s: a string of at most %zu bytes", a->name, sizeof a->text - 1);
      return -1;
    }
    snprintf(a->text, sizeof a->text, "%s", value);
    return 0;
  }
  if (tlen > 2 && type[tlen - 2] == '[' && type[tlen - 1] == ']') {
    a->array = 1;
    tlen -= 2;
  }
  a->dtype = ccshim_dtype_from_name(type, tlen);
  int d = a->dtype;
  int is_float = d == XLA_FFI_DataType_F32 || d == XLA_FFI_DataType_F64;
  int is_signed = d >= XLA_FFI_DataType_S8 && d <= XLA_FFI_DataType_S64;
  int is_unsigned = (d >= XLA_FFI_DataType_U8 && d <= XLA_FFI_DataType_U64) ||
                    (d == XLA_FFI_DataType_PRED && !a->array);
  if (!is_float && !is_signed && !is_unsigned) {
    snprintf(err, cap,
             "--attr %s: type '%.*s' is not an attribute type (pred, s8..s64, u8..u64, f32, "
             "f64, str; arrays as TYPE[])",
             a->name, (int)tlen, type);
    return -1;
  }
  const char* p = value;
  for (;;) {
    if (a->count == ATTR_VALUES) {
      snprintf(err, cap, "--attr %s: at most %d values", a->name, ATTR_VALUES);
      return -1;
    }
    char* end;
    errno = 0;
    if (is_float)
      a->v.f[a->count] = strtod(p, &end);
    else if (is_signed)
      a->v.i[a->count] = strtoll(p, &end, 0);
    else
      a->v.u[a->count] = strtoull(p, &end, 0);
    if (end == p || errno || (*end != '\0' && !(a->array && *end == ','))) {
      snprintf(err, cap, "--attr %s: '%s' is not a %s value", a->name, value, ccshim_dtype_name(d));
      return -1;
    }
    a->count++;
    if (*end == '\0') break;
    p = end + 1;
  }
  if (!a->array && a->count != 1) {
    snprintf(err, cap, "--attr %s: one value expected", a->name);
    return -1;
  }
  return 0;
}

/* One option's value into the target; 0, or -1 with a one-line error. */
#define OPTION_FN(name)                                                                       \
  static int name(const char* opt, const char* v, const char* base_dir, target* t, char* err, \
                  size_t cap)

OPTION_FN(set_api) {
  (void)base_dir;
  return integer(opt, v, 1, 3, &t->api, err, cap);
}

OPTION_FN(set_platform) {
  (void)opt, (void)base_dir;
  if (ccshim_platform_parse(v, &t->platform) == CCSHIM_OK) return 0;
  snprintf(err, cap, "%s", ccshim_last_error());
  return -1;
}

OPTION_FN(set_signature) {
  (void)opt, (void)base_dir, (void)err, (void)cap;
  free(t->signature);
  t->signature = conform_format("%s", v);
  return 0;
}

OPTION_FN(set_opaque_hex) {
  (void)base_dir;
  free(t->opaque);
  t->opaque = NULL;
  return hex_bytes(opt, v, &t->opaque, &t->opaque_len, err, cap);
}

OPTION_FN(add_arg_hex) {
  (void)base_dir;
  char* end;
  errno = 0;
  unsigned long index = strtoul(v, &end, 10);
  if (end == v || *end != '=' || errno) {
    snprintf(err, cap, "--arg-hex %s: expected I=HEX, the argument's index and its bytes", v);
    return -1;
  }
  if (t->num_fixed == MAX_ATTRS) {
    snprintf(err, cap, "--arg-hex: at most %d arguments", MAX_ATTRS);
    return -1;
  }
  t->fixed[t->num_fixed].index = index;
  if (hex_bytes(opt, end + 1, &t->fixed[t->num_fixed].bytes, &t->fixed[t->num_fixed].len, err, cap))
    return -1;
  t->num_fixed++;
  return 0;
}

/* --arg-from I=FUNC: checked here for its form; the side's Python finds FUNC. */
OPTION_FN(add_arg_from) {
  (void)base_dir;
  char* end;
  errno = 0;
  unsigned long index = strtoul(v, &end, 10);
  if (end == v || *end != '=' || end[1] == '\0' || errno) {
    snprintf(err, cap, "%s %s: expected I=FUNC, the argument's index and a function of the module",
             opt, v);
    return -1;
  }
  for (int k = 0; k < t->num_arg_from; k++)
    if (strtoul(t->arg_from[k], NULL, 10) == index) {
      snprintf(err, cap, "%s: argument %lu is given twice", opt, index);
      return -1;
    }
  if (t->num_arg_from == MAX_ATTRS) {
    snprintf(err, cap, "%s: at most %d arguments", opt, MAX_ATTRS);
    return -1;
  }
  t->arg_from[t->num_arg_from++] = conform_format("%s", v);
  return 0;
}

/* --opaque-file: the whole file, at most OPAQUE_FILE_MAX bytes. */
OPTION_FN(set_opaque_file) {
  (void)opt, (void)base_dir;
  FILE* f = fopen(v, "rb");
  if (f == NULL) {
    snprintf(err, cap, "--opaque-file %s: %s", v, strerror(errno));
    return -1;
  }
  free(t->opaque);
  t->opaque = NULL;
  t->opaque_len = 0;
  size_t have = 0, got = 0;
  int rc = 0;
  do {
    t->opaque_len += got;
    if (t->opaque_len > OPAQUE_FILE_MAX) {
      snprintf(err, cap,
               "--opaque-file %s: more than %d MiB; an opaque (a backend config) is at most "
               "that here",
               v, OPAQUE_FILE_MAX >> 20);
      rc = -1;
      break;
    }
    if (t->opaque_len == have) {
      unsigned char* grown = realloc(t->opaque, have = have ? 2 * have : 4096);
      if (grown == NULL) {
        snprintf(err, cap, "--opaque-file %s: out of memory at %zu bytes", v, have);
        rc = -1;
        break;
      }
      t->opaque = grown;
    }
  } while ((got = fread(t->opaque + t->opaque_len, 1, have - t->opaque_len, f)) > 0);
  if (rc == 0 && ferror(f)) {
    snprintf(err, cap, "--opaque-file %s: read error", v);
    rc = -1;
  }
  fclose(f);
  return rc;
}

OPTION_FN(set_seed) {
  (void)opt, (void)base_dir;
  char* end;
  errno = 0;
  t->seed = strtoull(v, &end, 0);
  if (errno || end == v || *end) {
    snprintf(err, cap, "--seed %s: expected an unsigned integer", v);
    return -1;
  }
  return 0;
}

OPTION_FN(set_runs) {
  (void)base_dir;
  return integer(opt, v, 1, 100000, &t->runs, err, cap);
}

OPTION_FN(set_rtol) {
  (void)opt, (void)base_dir;
  char* end;
  t->rtol = strtod(v, &end);
  if (end == v || *end || !(t->rtol >= 0)) {
    snprintf(err, cap, "--rtol %s: expected a number >= 0", v);
    return -1;
  }
  return 0;
}

OPTION_FN(set_against) {
  (void)opt;
  const char* colon = strrchr(v, ':');
  if (colon == NULL || colon == v || colon[1] == '\0') {
    snprintf(err, cap, "--against %s: expected LIB:HANDLER_SYMBOL", v);
    return -1;
  }
  free(t->against_lib);
  free(t->against_symbol);
  t->against_lib = library_path(base_dir, v, (size_t)(colon - v));
  t->against_symbol = conform_format("%s", colon + 1);
  return 0;
}

/* --against-python, --against-name, and the folders a Python side puts
 * first on its path, --against-path and --python-path (relative to the
 * manifest's folder): a string each. */
OPTION_FN(set_python_side) {
  int folder = !strcmp(opt, "--against-path") || !strcmp(opt, "--python-path");
  char** field = !strcmp(opt, "--against-python") ? &t->against_python
                 : !strcmp(opt, "--against-name") ? &t->against_name
                 : !strcmp(opt, "--python-path")  ? &t->python_path
                                                  : &t->against_path;
  if (v[0] == '\0') {
    snprintf(err, cap, "%s: expected a value", opt);
    return -1;
  }
  free(*field);
  *field = folder && v[0] != '/' && base_dir != NULL ? conform_format("%s/%s", base_dir, v)
                                                     : conform_format("%s", v);
  return 0;
}

OPTION_FN(add_attr) {
  (void)opt, (void)base_dir;
  if (t->num_attrs == MAX_ATTRS) {
    snprintf(err, cap, "--attr: at most %d attributes", MAX_ATTRS);
    return -1;
  }
  if (parse_attr(v, &t->attrs[t->num_attrs], err, cap) != 0) return -1;
  t->num_attrs++;
  return 0;
}

/* A module given as a path is relative to the manifest, as a LIB is; a
 * module name is imported as it is. */
OPTION_FN(set_python) {
  (void)opt;
  static const char* const file_suffixes[] = {".so", ".py", ".pyd"}; /* as _modules reads them */
  const char* colon = strchr(v, ':');
  size_t n = colon ? (size_t)(colon - v) : strlen(v);
  int path = memchr(v, '/', n) != NULL;
  for (size_t k = 0; k < 3 && !path; k++) {
    size_t m = strlen(file_suffixes[k]);
    path = n > m && !memcmp(v + n - m, file_suffixes[k], m);
  }
  if (n == 0) {
    snprintf(err, cap, "--python %s: expected MODULE[:ATTR]", v);
    return -1;
  }
  free(t->python);
  if (path && v[0] != '/' && base_dir != NULL)
    t->python = conform_format("%s/%s", base_dir, v);
  else
    t->python = conform_format("%s", v);
  return 0;
}

OPTION_FN(set_init) {
  (void)opt, (void)base_dir, (void)err, (void)cap;
  free(t->init);
  t->init = conform_format("%s", v);
  return 0;
}

OPTION_FN(set_restore_jax) {
  (void)opt, (void)v, (void)base_dir, (void)err, (void)cap;
  t->restore_jax = 1;
  return 0;
}

OPTION_FN(set_reference) {
  (void)base_dir;
  if (strcmp(v, "xla") != 0 && strcmp(v, "invoker") != 0) {
    snprintf(err, cap, "%s %s: expected xla or invoker", opt, v);
    return -1;
  }
  t->reference_xla = v[0] == 'x';
  return 0;
}

OPTION_FN(set_timeout) {
  (void)base_dir;
  return integer(opt, v, 1, 86400, &t->timeout, err, cap);
}

OPTION_FN(set_tuple_operands) {
  (void)base_dir;
  if (strcmp(v, "flat") != 0 && strcmp(v, "nested") != 0) {
    snprintf(err, cap, "%s %s: expected flat or nested", opt, v);
    return -1;
  }
  t->tuple_operands = v[0] == 'n' ? CCSHIM_TUPLES_NESTED : CCSHIM_TUPLES_FLAT;
  return 0;
}

/* Every option of `ccshim conform`, in the order --help lists them: the
 * parser and --help take them from here. */
const option_spec conform_options[] = {
    {"--json", NULL, NULL, "the report as JSON"},
    {"--manifest", "FILE", NULL,
     "the targets of a manifest, one a line in these words, --python, --init and --reference "
     "too (with only --json beside it)"},
    {"--python", "MODULE[:ATTR] [NAME]", set_python,
     "the kernel as a project ships it: a capsule from a Python extension (MODULE: a name, or "
     "a path to a .so or .py) -- its registrations()[NAME], or ATTR (a capsule, or a mapping "
     "and NAME); run in $CCSHIM_PYTHON (python3), so kernels that need the interpreter work"},
    {"--init", "FUNC", set_init,
     "call MODULE.FUNC() in each child process before the kernel, under --timeout (jaxlib's "
     "_lapack: initialize); one that exits, raises or hangs is an error"},
    {"--python-path", "DIR", set_python_side,
     "put before PYTHONPATH for --python's side only: where the legacy build is"},
    {"--restore-jax", NULL, set_restore_jax,
     "import --python's module with the names of JAX's custom-call plumbing that "
     "zero-change mode puts back (docs/legacy.md), for a legacy build the running JAX no "
     "longer imports; its kernel still runs by the reference"},
    {"--reference", "xla|invoker", set_reference,
     "the legacy side: ccshim's invoker (the default), or XLA's own legacy custom-call path in "
     "jaxlib, so that equal means equal to XLA (Python with JAX)"},
    {"--api", "N", set_api, "1, 2 or 3: the kernel's legacy API version (required)"},
    {"--platform", "P", set_platform, "cpu: conform runs CPU kernels (GPU: tests/gpu/run.sh)"},
    {"--signature", "SIG", set_signature,
     "its buffers, e.g. '(f32[128], f32[2048]) -> f32[2048]' (required)"},
    {"--opaque-hex", "HEX", set_opaque_hex, "the opaque (backend config) bytes"},
    {"--arg-hex", "I=HEX", add_arg_hex, "fix argument I to these bytes (dims, flags)"},
    {"--arg-from", "I=FUNC", add_arg_from,
     "fix argument I, in each side's own process, to the bytes MODULE.FUNC() returns there "
     "(with --python, and --against-python's module on the typed side): a value only that "
     "process has, as an object's address a kernel finds its state by"},
    {"--opaque-file", "F", set_opaque_file, "the opaque bytes, read from a file (at most 64 MiB)"},
    {"--seed", "S", set_seed, "the inputs' seed (default 1)"},
    {"--runs", "K", set_runs, "runs, each side every run (default 3)"},
    {"--rtol", "R", set_rtol, "compare floats within R instead of byte for byte"},
    {"--against", "LIB2:HANDLER", set_against, "a native typed-FFI port instead of the adapter"},
    {"--attr", "NAME=TYPE:VALUE", add_attr, "an attribute for the port (TYPE[] for arrays, str)"},
    {"--against-python", "MODULE[:ATTR]", set_python_side,
     "the handler `ccshim port` wrote, from the ported build's module (a capsule, or an entry "
     "of ATTR's mapping), instead of the adapter; run in Python"},
    {"--against-name", "NAME", set_python_side, "its entry in ATTR's mapping"},
    {"--against-path", "DIR", set_python_side,
     "put before PYTHONPATH for that side only: where the ported build is"},
    {"--timeout", "SECONDS", set_timeout, "each side's deadline, then SIGKILL (default 60)"},
    {"--tuple-operands", "flat|nested", set_tuple_operands,
     "tuple operands in in[]: their leaves (XLA's CPU runtime since jaxlib 0.4.32, the "
     "default) or a pointer table each (the classic CPU convention)"},
};

const size_t conform_num_options = sizeof conform_options / sizeof conform_options[0];

const option_spec* conform_find_option(const char* name) {
  for (size_t k = 0; k < conform_num_options; k++)
    if (!strcmp(conform_options[k].name, name)) return &conform_options[k];
  return NULL;
}

/* A target's kernel: LIB SYMBOL, or with --python MODULE[:ATTR] [NAME] the
 * module (named in the report as the library) and NAME (else ATTR, else
 * registrations, where Python looks); 0 or -1 with err. */
static int set_kernel(target* t, char** pos, int positional, const char* base_dir, char* err,
                      size_t cap) {
  if (t->python == NULL) {
    if (positional < 2) {
      snprintf(err, cap, "expected LIB SYMBOL");
      return -1;
    }
    if (positional > 2) {
      snprintf(err, cap, "unexpected argument '%s'", pos[2]);
      return -1;
    }
    t->lib = library_path(base_dir, pos[0], strlen(pos[0]));
    t->symbol = conform_format("%s", pos[1]);
    return 0;
  }
  if (positional > 1) {
    snprintf(err, cap, "--python %s: one NAME expected after it, got %s, %s%s", t->python, pos[0],
             pos[1], positional > 2 ? ", ..." : "");
    return -1;
  }
  const char* attr = strchr(t->python, ':');
  t->python_named = positional == 1;
  t->lib = conform_format("%s", t->python);
  t->symbol = conform_format("%s", positional ? pos[0] : attr ? attr + 1 : "registrations");
  return 0;
}

/* What a target needs that no option default gives, and options that do
 * not go together; 0 or -1 with err. */
static int check_complete(const target* t, char* err, size_t cap) {
  if (t->api == 0) {
    snprintf(err, cap, "--api N is required (1, 2 or 3)");
    return -1;
  }
  if (t->num_attrs && !t->against_lib) {
    snprintf(err, cap, "--attr goes with --against (the adapter's only attribute is the opaque)");
    return -1;
  }
  if (t->signature == NULL || t->signature[0] == '\0') {
    snprintf(err, cap, "--signature is required, e.g. '(f32[128], f32[2048]) -> f32[2048]'");
    return -1;
  }
  if ((t->init || t->python_path || t->restore_jax) && !t->python) {
    snprintf(err, cap, "--init, --python-path and --restore-jax go with --python (its module)");
    return -1;
  }
  if (t->num_arg_from && (!t->python || t->against_lib)) {
    snprintf(err, cap,
             "--arg-from goes with --python: its sides run in Python (and not with "
             "--against, whose typed side does not)");
    return -1;
  }
  for (int k = 0; k < t->num_arg_from; k++)
    for (int f = 0; f < t->num_fixed; f++)
      if (strtoul(t->arg_from[k], NULL, 10) == t->fixed[f].index) {
        snprintf(err, cap, "argument %zu is given by both --arg-hex and --arg-from",
                 t->fixed[f].index);
        return -1;
      }
  if (t->against_python && (t->against_lib || t->num_attrs)) {
    snprintf(err, cap,
             "--against-python takes the handler from Python, with the opaque as its "
             "u8 attribute: leave out --against and --attr");
    return -1;
  }
  if ((t->against_name || t->against_path) && !t->against_python) {
    snprintf(err, cap, "--against-name and --against-path go with --against-python");
    return -1;
  }
  if (t->against_lib && t->reference_xla) {
    snprintf(err, cap,
             "--against compares a native port with ccshim's adapter; with --reference xla the "
             "legacy side is XLA's, so leave one out");
    return -1;
  }
  return 0;
}

/* Parses one target's words; returns 0 or writes a one-line error.  Options
 * of the command (--json) set *json, when given. */
int conform_parse_target(int argc, char** argv, const char* base_dir, target* t, int* json,
                         char* err, size_t cap) {
  memset(t, 0, sizeof *t);
  t->platform = CCSHIM_PLATFORM_HOST;
  t->seed = 1;
  t->runs = 3;
  t->timeout = 60;
  char* pos[3];
  int positional = 0;
  for (int i = 0; i < argc; i++) {
    const char* a = argv[i];
    if (a[0] != '-' || a[1] != '-') {
      if (positional < 3) pos[positional++] = argv[i];
      continue;
    }
    const option_spec* o = conform_find_option(a);
    if (o == NULL) {
      snprintf(err, cap, "unknown option %s (ccshim conform --help lists them)", a);
      return -1;
    }
    const char* v = NULL;
    if (o->value != NULL) {
      if (i + 1 == argc) {
        snprintf(err, cap, "%s needs a value (%s)", a, o->value);
        return -1;
      }
      v = argv[++i];
    }
    if (o->set != NULL) {
      if (o->set(a, v, base_dir, t, err, cap) != 0) return -1;
    } else if (!strcmp(a, "--json")) {
      if (json) *json = 1;
    } else {
      snprintf(err, cap, "%s is not for one target's words here (it goes on the command line)", a);
      return -1;
    }
  }
  if (set_kernel(t, pos, positional, base_dir, err, cap) != 0) return -1;
  return check_complete(t, err, cap);
}

/* Splits a manifest line into words: blanks separate, quotes group, '#'
 * outside quotes ends the line. */
int conform_split_words(char* line, char** words, int max) {
  int n = 0;
  char* p = line;
  while (*p) {
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    if (*p == '\0' || *p == '#') break;
    if (n == max) return -1;
    char* out = p;
    words[n++] = out;
    char quote = 0;
    while (*p && (quote || (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n'))) {
      if (!quote && (*p == '\'' || *p == '"')) {
        quote = *p++;
      } else if (quote && *p == quote) {
        quote = 0;
        p++;
      } else {
        *out++ = *p++;
      }
    }
    if (quote) return -2;
    if (*p) p++;
    *out = '\0';
  }
  return n;
}
