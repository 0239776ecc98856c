/*
 * `ccshim conform`'s engine, shared by its parts: a target (what one line of
 * arguments asks for), how each side of a run ended, the report, the
 * buffers with their guards, and the functions each part gives the others.
 *
 *   common.c    strings, the report, the names of forms and the reference
 *   buffers.c   inputs, guarded buffers, comparing results
 *   child.c     running one side in a child process, under a deadline
 *   target.c    one target: its runs, side by side
 *   options.c   the options table, a target's words, manifest lines
 *   report.c    the report as a table or JSON, and --help
 *   in_python.c a side run in Python (ccshim.conform): its control record
 *   main.c      the command and manifests
 */
#ifndef CCSHIM_CONFORM_H
#define CCSHIM_CONFORM_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ccshim/ccshim.h"
#include "tools.h"

enum { MESSAGE_CAP = 512, OUTPUT_SHOWN = 2048 };

enum { MAX_ATTRS = 32, ATTR_VALUES = 64, OPAQUE_FILE_MAX = 64 << 20 };

/* One --attr: a scalar, a string, or an array of up to ATTR_VALUES. */
typedef struct attr {
  char name[64];
  int dtype; /* XLA_FFI_DataType; STRING for str */
  int array;
  size_t count;
  union {
    int64_t i[ATTR_VALUES];
    uint64_t u[ATTR_VALUES];
    double f[ATTR_VALUES];
  } v;
  char text[256]; /* a str value */
} attr;

/* A target; every string is owned (target_reset frees), so none is cut. */
typedef struct target {
  char* lib;
  char* symbol;
  int api;
  ccshim_platform platform;
  char* signature;
  unsigned char* opaque;
  size_t opaque_len;
  uint64_t seed;
  int runs;
  double rtol; /* 0: byte for byte */
  int timeout;
  ccshim_tuple_layout tuple_operands; /* --tuple-operands: how in[] holds tuples */
  char* python;                       /* --python MODULE[:ATTR], or NULL; lib then names it */
  int python_named;                   /* NAME was given after it (else symbol is ATTR's) */
  char* init;                         /* --init FUNC, or NULL */
  char* python_path;                  /* --python-path DIR: where that Python finds its build */
  int restore_jax;                    /* --restore-jax: JAX's removed names put back first */
  int reference_xla;                  /* --reference xla */
  char* against_lib;                  /* --against: the native handler's library, or NULL */
  char* against_symbol;
  char* against_python; /* --against-python MODULE[:ATTR]: a port's handler, in Python */
  char* against_name;   /* --against-name NAME: its entry in ATTR's mapping */
  char* against_path;   /* --against-path DIR: where that Python finds the port's build */
  attr attrs[MAX_ATTRS];
  int num_attrs;
  struct {
    size_t index;
    unsigned char* bytes;
    size_t len;
  } fixed[MAX_ATTRS]; /* --arg-hex */
  int num_fixed;
  char* arg_from[MAX_ATTRS]; /* --arg-from I=FUNC, as given */
  int num_arg_from;
} target;

/* How one side of one run ended. */
enum { RAN = 0, FAILED = 1, CRASHED = 2, TIMED_OUT = 3, BROKEN = 4 };

/* Written by the child, in shared memory apart from the buffers.  A
 * failure's message is kept to MESSAGE_CAP bytes for the report, but
 * compared whole, by its length and hash. */
typedef struct side {
  int state;
  int loaded;                /* the child got past loading the libraries */
  int done;                  /* the child came back from the kernel */
  int code;                  /* XLA code of a failure */
  size_t message_len;        /* the whole failure message's length */
  uint64_t message_hash;     /* and its FNV-1a hash */
  char message[MESSAGE_CAP]; /* failure message, crash signal, or setup error */
} side;

typedef struct report {
  char* symbol; /* owned, as every string here */
  char* lib;
  char form[32];
  char* signature;
  int runs, equal;
  int failed;          /* of the equal runs, those where both sides failed alike */
  int status;          /* 0 equal, 1 differ, 2 crashed, 3 error, 4 overran */
  long first_byte;     /* the first differing byte, or -1 */
  size_t first_result; /* of which result */
  char* detail;        /* NULL when there is nothing to say */
  char* output;        /* what a kernel printed first, or NULL */
  char* failure;       /* the kernel's message in the first run both failed alike, or NULL */
  int by_reference;    /* the legacy side was the given reference's, not the invoker's */
} report;

/* Every buffer ends at a guard page, the way Electric Fence places them: a
 * kernel that writes past the end of a buffer faults on the page, and one
 * that writes into the alignment slack before it (under 64 bytes) is caught
 * by the canary there.  Buffers start 64-byte aligned, as XLA's do. */
enum { ALIGN = 64, CANARY = 0xCB, UNWRITTEN = 0xA5 };

typedef struct buffer {
  unsigned char* data; /* NULL for a token */
  size_t bytes;
  size_t slack; /* canary bytes after the buffer, up to the guard */
  int dtype;
} buffer;

typedef struct layout {
  ccshim_signature* sig;
  buffer* args;
  buffer* rets[2];    /* [0] the legacy side's results, [1] the typed side's */
  unsigned char* map; /* every buffer, in the memfd `fd` (a side run in Python maps it too) */
  size_t map_bytes;
  int fd;
} layout;

enum { RUN_LEGACY = 0, RUN_TYPED = 1, RUN_PROBE = 2 };

/* The control record of a side that runs in Python (ccshim.conform): at the
 * start of a memfd the child process gets as --control FD, the buffers'
 * memfd as --buffers FD.  docs/contracts.md, section 3, is its one
 * description; both sides' tests read it from there. */
enum { REFERENCE_NAME_CAP = 160 };
typedef struct control {
  char magic[8]; /* "ccshimC1" */
  uint32_t what; /* RUN_LEGACY, RUN_TYPED, RUN_PROBE */
  uint32_t api;
  uint32_t tuple_operands;
  uint32_t platform;
  uint64_t num_args;
  uint64_t num_rets;
  uint64_t signature_at; /* NUL-terminated text, at this offset in the record */
  uint64_t opaque_at;
  uint64_t opaque_len;
  uint64_t buffers_at;                /* num_args + num_rets control_buffer, args first */
  char reference[REFERENCE_NAME_CAP]; /* the side writes the reference's name here */
  side result;                        /* and how it ended here */
} control;

/* One buffer of this side in the buffers' memfd: `offset` UINT64_MAX for a
 * token (no memory); `guard` the offset of the PROT_NONE page after it. */
typedef struct control_buffer {
  uint64_t offset;
  uint64_t bytes;
  uint64_t guard;
} control_buffer;

/* An option: a target's words (`set` stores its value), or the command's
 * (--json, --manifest: `set` is NULL). */
typedef struct option_spec {
  const char* name;
  const char* value; /* the value's placeholder, or NULL for a flag */
  int (*set)(const char* opt, const char* v, const char* base_dir, struct target* t, char* err,
             size_t cap);
  const char* help;
} option_spec;

/* common.c */
const char* conform_reference_name(int by_reference);
void conform_note_reference(const char* name);
void* conform_need(void* p);
char* conform_format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void conform_set_detail(report* r, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void conform_report_reset(report* r);
void conform_set_message(side* out, const char* m);
const char* conform_form_name(int api, ccshim_platform p);

/* buffers.c */
long conform_compare(const unsigned char* a, const unsigned char* b, size_t bytes, int dtype,
                     double rtol);
void conform_layout_free(layout* l);
int conform_layout_init(layout* l, char* detail, size_t cap);
void conform_prepare(buffer* b, int byte, uint64_t seed, int specials);
long conform_overrun(const buffer* b);

/* child.c */
void conform_in_child(const target* t, layout* l, side* out, int what, char** output);

/* in_python.c */
int conform_in_python(const target* t, int what);
control* conform_control_new(const target* t, const layout* l, int what, int* fd);
void conform_control_free(control* c, int fd);
void conform_exec_python(const target* t, int control_fd, int buffers_fd, control* c);

/* target.c */
int conform_check_target(target* t, report* r);

/* options.c */
extern const option_spec conform_options[];
extern const size_t conform_num_options;
const option_spec* conform_find_option(const char* name);
void conform_target_reset(target* t);
int conform_parse_target(int argc, char** argv, const char* base_dir, target* t, int* json,
                         char* err, size_t cap);
int conform_split_words(char* line, char** words, int max);

/* report.c */
void conform_print_reports(const report* r, int n, int json);
void conform_print_usage(FILE* to);

#endif
