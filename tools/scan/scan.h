/*
 * What the parts of `ccshim scan` share: the findings a source file yields,
 * the file read twice over, and the targets they are joined into.
 *
 *   source.c   a file read twice over; brackets, arguments, literals
 *   match.c    legacy forms from parameter lists; the registration, call
 *              site and typed-handler matchers for C, C++, CUDA and HIP
 *   walk.c     the directory walk and reading one file
 *   targets.c  findings joined per target name; the wrap line for each
 *   report.c   text and JSON output; the subcommand's entry points
 *   artifacts.c exported programs (jax.export, StableHLO) found by their
 *              bytes and read through ccshim.export
 *   pyfiles.c  the tree's Python and Cython files, read by ccshim.scan
 *              (libcst, Cython's parser) after the walk, their findings put
 *              in the walk's order
 *   pyrun.c    running a reader of the ccshim package, reading its records
 */
#ifndef CCSHIM_TOOLS_SCAN_H
#define CCSHIM_TOOLS_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ccshim/base.h"

enum { NAME_CAP = 256, TEXT_CAP = 512, LINE_CAP = 4 * TEXT_CAP };
enum { MAX_FILE_BYTES = 64 << 20 };

typedef enum lang { LANG_C, LANG_PY } lang;
/* GPU when the vendor is not known (JAX's platform="gpu" means either).
 * SYCL: Intel's XPU plugin, whose kernels take a queue as their stream;
 * named, though ccshim wraps none. */
typedef enum plat { PLAT_UNKNOWN, PLAT_CPU, PLAT_CUDA, PLAT_ROCM, PLAT_GPU, PLAT_SYCL } plat;

static inline int scan_is_gpu(plat p) { return p >= PLAT_CUDA; }

/* Legacy forms told apart by a definition's parameters.  GPU v2 and v3 have
 * the same parameters; only the call site's api_version tells them apart. */
/* A legacy form: base.h's vocabulary (CCSHIM_FORM_NONE when none is known). */
typedef ccshim_legacy_form form;

typedef enum kind { REGISTRATION, CALL_SITE, DEFINITION, TYPED } kind;

typedef struct finding {
  kind kind;
  const char* file; /* owned by the scan (scan.paths), any length */
  int line;
  char what[NAME_CAP];      /* the macro or function that was matched */
  char name[NAME_CAP];      /* target name; "" when computed at run time */
  char name_expr[TEXT_CAP]; /* the expression that computes it, then */
  char function[NAME_CAP];  /* registered or defined function; "" if unknown */
  char scope[NAME_CAP];     /* its class or namespace, template arguments dropped */
  char module[NAME_CAP];    /* a capsule in a module's mapping: the module, if named */
  /* What of the module holds the capsule: "registrations()" (a pybind11 or
   * nanobind module's dict), a Cython module's dict ("custom_call_targets"),
   * or a module function that returns it ("factor()"); for a Python loop,
   * the mapping it registers.  "" otherwise. */
  char mapping[NAME_CAP];
  char via[TEXT_CAP];    /* a name resolved through a call or a loop: where it comes from */
  char passed[NAME_CAP]; /* and the literal that call passes (the name less a suffix) */
  /* A capsule a module offers (in its dict, or returned by a module
   * function), registered by whatever registers that module's capsules. */
  int offered;
  char expr[TEXT_CAP]; /* registered kernel expression (Python) */
  /* A name built per object at run time (from id()): its pattern, the
   * string pieces kept and each id() as <id> ("instance_filter_<id>");
   * empty for any other registration. */
  char pattern[TEXT_CAP];
  /* Any other name computed at run time from strings and values ("BasisFunc"
   * + str(obj.identifier)): its shape, the string pieces kept and each
   * computed piece as <...> ("BasisFunc<...>"); empty for any other. */
  char name_shape[TEXT_CAP];
  char opaque[TEXT_CAP]; /* call site: the backend_config expression */
  char shapes[TEXT_CAP]; /* ffi_call: the result shapes expression */
  plat platform;
  int version;         /* call site: api_version, 0 when not known */
  int version_default; /* the version came from the API's default */
  form form;           /* definition */
  lang lang;           /* of the file it is in */
  int cython;          /* that file is Cython (.pyx, .pxd, .pxi) */
  int cxx_linkage;     /* definition: C++ name mangling likely */
} finding;

/* An exported program's legacy call, as ccshim.export read it. */
/* What `ccshim rewrite --list --tsv` said of a program: every string owned
 * and whole, however long (a 40-operand signature is 658 characters). */
typedef struct artifact_call {
  char* target;
  int version;
  long opaque_bytes;
  char* signature;
  char* location;
} artifact_call;

typedef struct artifact {
  char* path;                    /* as opened (owned) */
  const char* shown;             /* as reported (scan.paths) */
  int read;                      /* ccshim.export read it */
  char* kind;                    /* export, portable, bytecode, text (owned) */
  char* platforms;               /* comma-separated (owned) */
  int typed, builtin, rewritten; /* calls left alone, by kind */
  artifact_call* calls;          /* the legacy ones */
  size_t num_calls, calls_cap;
  char* error; /* why it was not read (owned), or NULL */
} artifact;

/* A Python or Cython file the walk found, for ccshim.scan: its findings
 * go at `at` among the walk's (pyfiles.c). */
typedef struct pyfile {
  char* path;        /* as opened (owned) */
  const char* shown; /* as reported (scan.paths) */
  size_t at;
  int cython; /* .pyx, .pxd or .pxi */
  int read;   /* a P or E record came */
} pyfile;

typedef struct scan {
  finding* f;
  size_t n, cap;
  artifact* arts; /* exported programs found */
  size_t num_arts, arts_cap;
  char** paths; /* every file name a finding points at */
  size_t num_paths, paths_cap;
  size_t files, lines, errors;
  int json;
  pyfile* py; /* Python and Cython files, read after the walk (pyfiles.c) */
  size_t num_py, py_cap;
} scan;

/* A call site read from an exported program (artifacts.c), which has no
 * source line. */
static inline int scan_in_program(const finding* f) { return f->kind == CALL_SITE && f->line == 0; }

/* --- A source file, twice over ------------------------------------------------ */

typedef struct source {
  const char* path;
  lang lang;
  char* code; /* comments blanked */
  char* skel; /* comments and string contents blanked */
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

/* The arguments of a call: [begin, end) offsets, trimmed, split at the
 * commas of the outermost level. */
typedef struct args {
  size_t begin[32], end[32];
  int n;
} args;

/* --- Targets ------------------------------------------------------------------------------ */

typedef struct target {
  char name[TEXT_CAP]; /* or, when computed, the expression */
  int computed;
  /* The platform of the extension module that registers it, when one name
   * is registered by modules of different platforms (a CPU and a GPU
   * registrations() dict): a target per platform.  PLAT_UNKNOWN otherwise. */
  plat module_platform;
  const finding* def;    /* the definition, if found */
  const finding* reg[8]; /* registrations, up to 8 shown */
  int num_reg;
  const finding* call[8]; /* call sites, up to 8 shown */
  int num_call;
  plat platform;
  /* A function with a legacy parameter list that nothing registers or
   * calls: listed apart, as a candidate, not as a target. */
  int candidate;
  /* Registered once per object under a name built from id(): the
   * registration that says so (its pattern), or NULL. */
  const finding* instance;
  form form; /* of the definition, as resolved */
  int version;
  char* how;           /* how the version is known (owned) */
  char note[TEXT_CAP]; /* a conflict, or what is missing */
} target;

typedef struct inventory {
  target* t;
  size_t n, cap;
} inventory;

/* source.c */
plat scan_plat_parse(const char* s);
const char* scan_keep_path(scan* s, const char* path);
void* scan_grow(void* p, size_t* cap, size_t elem, size_t want);
const char* scan_plat_text(plat p);
char* scan_strdup(const char* text);
int scan_ident_char(int c);
size_t scan_skip_space(const char* s, size_t i, size_t n);
size_t scan_closing(const source* src, size_t open);
void scan_split_args(const source* src, size_t open, size_t close, args* a);
void scan_text_of(const source* src, size_t b, size_t e, char* out, size_t cap);
int scan_line_of(const source* src, size_t off);
finding* scan_add(scan* s, kind k, const source* src, int line, const char* what);
int scan_positional(const source* src, const args* a, int n);
int scan_keyword(const source* src, const args* a, const char* key, size_t* b, size_t* e);
int scan_literal(const source* src, size_t b, size_t e, char* out, size_t cap);
void scan_function_of(const source* src, size_t b, size_t e, char* out, size_t cap);
void scan_scope_of(const char* qualified, char* out, size_t cap);
int scan_version_of(const source* src, size_t b, size_t e);
void scan_blank(source* src);
int scan_match_brackets(source* src);

/* match.c */
void scan_source(scan* s, source* src);
/* The legacy form of a function with these n parameters (each as written)
 * into d's form, platform and version (the path tells HIP); 0 when its
 * parameters are no legacy form. */
int scan_legacy_form(finding* d, char params[][TEXT_CAP], int n, const char* path);

/* walk.c */
void scan_walk(scan* s, const char* dir);
int scan_open_any(const char* path, int flags);
int scan_source_lang(const char* name, lang* l, int* cython);
void scan_file(scan* s, const char* path, const char* shown, lang l);
void scan_text(scan* s, const char* shown, lang l, char* code, size_t len);

/* pyrun.c: runs `MODULE ARGS... --paths-file /dev/fd/N` of the ccshim
 * package with `paths` as N; its standard output (owned, NULL when it did
 * not start), and into `said` why what it did not read was not read. */
char* scan_python_records(const char* module, char** args, int argc, FILE* paths, char* said,
                          size_t cap);
/* The next tab-separated field of a line, and the next line of a text, each
 * cut in place; "" past the end. */
char* scan_field(char** p);
char* scan_line(char** p);

/* pyfiles.c */
void scan_python_later(scan* s, const char* path, const char* shown);
void scan_read_python(scan* s);

/* artifacts.c */
int scan_is_artifact(const char* name, const char* head, size_t n, size_t size);
void scan_maybe_artifact(scan* s, const char* path, const char* shown);
void scan_read_artifacts(scan* s);
char* scan_rewrite_line(const char* shown); /* owned */
void scan_copy_marked(char* out, size_t cap, const char* text);
void scan_free_artifacts(scan* s);

/* targets.c */
void scan_wrap_line(const target* t, char* out, size_t cap);
void scan_wrap_line_c(const target* t, char* out, size_t cap);
/* The .pyx file when the wrap line is Cython (a cdef kernel registered from
 * Cython by its address, which no Python object holds), else NULL. */
const char* scan_wrap_cython_file(const target* t);
void scan_call_change(const target* t, char* out, size_t cap);
/* A computed name's shape ("BasisFunc<...>"), from its registrations, or "". */
const char* scan_name_shape(const target* t);
void scan_build(const scan* s, inventory* inv);

#endif /* CCSHIM_TOOLS_SCAN_H */
