/*
 * `ccshim conform`: a legacy kernel side by side, through the legacy invoker
 * (as XLA's legacy runtime called it) and through an adapter in the embedded
 * typed runtime, on deterministic random inputs, compared byte for byte or
 * within a relative tolerance.  Each side runs in a child process of its
 * own, which alone loads the kernel's library: in its own process group,
 * stdin from /dev/null, stdout and stderr captured, and killed with SIGKILL
 * (with everything it started) at a deadline the parent keeps.  So a kernel
 * or a library initialiser that crashes, exits, hangs, blocks signals, stops
 * itself or forks is reported as what it did, and never ends conform or
 * writes into its report.  Outputs come back through shared memory.
 *
 *   ccshim conform LIB SYMBOL --api N --signature SIG [--platform cpu]
 *                  [--opaque-hex HEX | --opaque-file F] [--seed S] [--runs K]
 *                  [--rtol R] [--timeout SECONDS] [--json]
 *                  [--arg-hex I=HEX]... [--against LIB2:HANDLER [--attr NAME=TYPE:VALUE]...]
 *   ccshim conform --manifest FILE [--json]
 *
 * --arg-hex fixes argument I to the given bytes in every run, for kernels that
 * read dimensions or flags from an operand (jaxlib's early kernels did); the
 * other arguments stay random.
 *
 * With --against, the typed side is not an adapter but a native typed-FFI
 * handler (an XLA_FFI_Handler symbol, as XLA_FFI_DEFINE_HANDLER_SYMBOL
 * exports), given the same buffers and the attributes named by --attr
 * (TYPE: pred, s8..s64, u8..u64, f32, f64, or str; an array as TYPE[] with
 * values separated by commas): the regression test of a kernel ported from
 * its legacy form.
 *
 * A manifest has one target a line, the same arguments as above ('#'
 * starts a comment; quotes group words; a relative LIB is relative to the
 * manifest).  Exit status: 0 when every target is equal, 1 when one is not,
 * 2 when the command itself is wrong.
 */
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
  char* against_lib;                  /* --against: the native handler's library, or NULL */
  char* against_symbol;
  attr attrs[MAX_ATTRS];
  int num_attrs;
  struct {
    size_t index;
    unsigned char* bytes;
    size_t len;
  } fixed[MAX_ATTRS]; /* --arg-hex */
  int num_fixed;
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
} report;

/* Set for one ccshim_conform_embedded call (ccshim.conform, in Python):
 * the kernel at an address in this process instead of LIB SYMBOL (a
 * capsule from an extension that needs the interpreter), and a reference
 * run in place of ccshim's legacy invoker (XLA's own legacy path). */
static struct {
  void* kernel;
  ccshim_conform_reference_fn reference;
  const char* reference_name;
} embedded;

static const char* reference_name(void) {
  return embedded.reference ? embedded.reference_name
                            : "ccshim's legacy invoker (XLA's legacy calling convention)";
}

/* No memory is the one thing a command-line tool cannot report into a
 * report: it says so and exits 2. */
static void* need(void* p) {
  if (p == NULL) {
    fputs("ccshim conform: out of memory\n", stderr);
    exit(2);
  }
  return p;
}

/* A formatted string on the heap, however long. */
static char* vformat(const char* fmt, va_list ap) {
  char* s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) s = NULL;
  return need(s);
}

static char* format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static char* format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char* s = vformat(fmt, ap);
  va_end(ap);
  return s;
}

static void set_detail(report* r, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_detail(report* r, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char* s = vformat(fmt, ap);
  va_end(ap);
  free(r->detail);
  r->detail = s;
}

static void report_reset(report* r) {
  free(r->symbol);
  free(r->lib);
  free(r->signature);
  free(r->detail);
  free(r->output);
  memset(r, 0, sizeof *r);
}

static uint64_t fnv1a(const char* s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
  return h;
}

/* Records a failure's message: the whole of it compared, a prefix shown. */
static void set_message(side* out, const char* m) {
  size_t n = strlen(m);
  out->message_len = n;
  out->message_hash = fnv1a(m, n);
  snprintf(out->message, sizeof out->message, "%s", m);
  if (n >= sizeof out->message)
    snprintf(out->message + sizeof out->message - 32, 32, "... (%zu bytes)", n);
}

static const char* form_name(int api, ccshim_platform p) {
  const char* name = ccshim_legacy_form_name(api, p);
  return name ? name : "unknown form";
}

/* --- Inputs ----------------------------------------------------------------- */

static uint64_t next(uint64_t* s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

/* One random float value: ordinary, or with `specials` now and then NaN,
 * +-Inf or -0 (every other run, so that kernels which refuse non-finite
 * input are compared on the results they compute as well). */
static double random_value(uint64_t r, int specials) {
  switch (specials ? r % 53 : 53) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return -0.0;
    default: return (double)(int64_t)(r >> 11) / 9007199254740992.0 * 200.0;
  }
}

/* Random values for one buffer: floats from random_value, integers any
 * bits, pred 0 or 1, the rest any bytes. */
static void fill(void* data, size_t bytes, int dtype, uint64_t seed, int specials) {
  uint64_t s = seed | 1;
  unsigned char* p = data;
  if (dtype == XLA_FFI_DataType_F32 || dtype == XLA_FFI_DataType_C64) {
    float* f = data;
    for (size_t i = 0; i < bytes / 4; i++) f[i] = (float)random_value(next(&s), specials);
    return;
  }
  if (dtype == XLA_FFI_DataType_F64 || dtype == XLA_FFI_DataType_C128) {
    double* f = data;
    for (size_t i = 0; i < bytes / 8; i++) f[i] = random_value(next(&s), specials);
    return;
  }
  for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)next(&s);
  if (dtype == XLA_FFI_DataType_PRED)
    for (size_t i = 0; i < bytes; i++) p[i] &= 1;
}

/* --- Comparing ---------------------------------------------------------------- */

static double half_to_double(uint16_t h, int bf16) {
  uint32_t f;
  if (bf16) {
    f = (uint32_t)h << 16;
  } else {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023;
    if (exp == 0) {
      float v = ldexpf((float)man, -24);
      return sign ? -v : v;
    }
    f = sign | (exp == 31 ? 0xff << 23 : (exp - 15 + 127) << 23) | man << 13;
  }
  float v;
  memcpy(&v, &f, 4);
  return v;
}

/* Within rtol: equal bits, both NaN, or |a - b| <= rtol * |b|. */
static int close_enough(double a, double b, double rtol) {
  if (isnan(a) && isnan(b)) return 1;
  if (a == b) return 1;
  return fabs(a - b) <= rtol * fabs(b);
}

/* Returns the first differing byte of a buffer, or -1. */
static long compare(const unsigned char* a, const unsigned char* b, size_t bytes, int dtype,
                    double rtol) {
  if (rtol <= 0) {
    for (size_t i = 0; i < bytes; i++)
      if (a[i] != b[i]) return (long)i;
    return -1;
  }
  size_t w = 0;
  switch (dtype) {
    case XLA_FFI_DataType_F16:
    case XLA_FFI_DataType_BF16: w = 2; break;
    case XLA_FFI_DataType_F32:
    case XLA_FFI_DataType_C64: w = 4; break;
    case XLA_FFI_DataType_F64:
    case XLA_FFI_DataType_C128: w = 8; break;
    default: return compare(a, b, bytes, dtype, 0);
  }
  for (size_t i = 0; i + w <= bytes; i += w) {
    double x, y;
    if (w == 2) {
      uint16_t u, v;
      memcpy(&u, a + i, 2);
      memcpy(&v, b + i, 2);
      x = half_to_double(u, dtype == XLA_FFI_DataType_BF16);
      y = half_to_double(v, dtype == XLA_FFI_DataType_BF16);
    } else if (w == 4) {
      float u, v;
      memcpy(&u, a + i, 4);
      memcpy(&v, b + i, 4);
      x = u;
      y = v;
    } else {
      memcpy(&x, a + i, 8);
      memcpy(&y, b + i, 8);
    }
    if (!close_enough(x, y, rtol)) return (long)i;
  }
  return -1;
}

/* --- Buffers ------------------------------------------------------------------ */

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
  buffer* rets[2]; /* [0] the legacy side's results, [1] the typed side's */
  unsigned char* map;
  size_t map_bytes;
} layout;

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

static void layout_free(layout* l) {
  if (l->map) munmap(l->map, l->map_bytes);
  free(l->args);
  free(l->rets[0]);
  free(l->rets[1]);
  ccshim_signature_free(l->sig);
  memset(l, 0, sizeof *l);
}

/* Sizes every leaf, maps the buffers with their guards; 0 or -1 with detail. */
static int layout_init(layout* l, char* detail, size_t cap) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t na = l->sig->num_arg_leaves, nr = l->sig->num_ret_leaves;
  l->args = calloc(na + 1, sizeof(buffer));
  l->rets[0] = calloc(nr + 1, sizeof(buffer));
  l->rets[1] = calloc(nr + 1, sizeof(buffer));
  if (!l->args || !l->rets[0] || !l->rets[1]) {
    snprintf(detail, cap, "out of memory");
    return -1;
  }
  buffer* all[3] = {l->args, l->rets[0], l->rets[1]};
  size_t count[3] = {na, nr, nr};
  size_t total = 0;
  for (int g = 0; g < 3; g++)
    for (size_t i = 0; i < count[g]; i++) {
      const ccshim_shape* s = g == 0 ? l->sig->arg_leaves[i] : l->sig->ret_leaves[i];
      buffer* b = &all[g][i];
      b->dtype = s->dtype;
      b->bytes = ccshim_dtype_bytes(s->dtype, (uint64_t)ccshim_shape_elements(s), NULL);
      if (b->bytes > ((size_t)1 << 40)) {
        snprintf(detail, cap, "%s %zu needs %zu bytes; conform maps at most 1 TiB a buffer",
                 g == 0 ? "argument" : "result", i, b->bytes);
        return -1;
      }
      if (s->dtype != XLA_FFI_DataType_TOKEN)
        total += round_up(round_up(b->bytes, ALIGN), page) + page;
    }
  l->map_bytes = total ? total : page;
  l->map = mmap(NULL, l->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (l->map == MAP_FAILED) {
    l->map = NULL;
    snprintf(detail, cap, "cannot map %zu bytes for the buffers: %s", total, strerror(errno));
    return -1;
  }
  unsigned char* at = l->map;
  for (int g = 0; g < 3; g++)
    for (size_t i = 0; i < count[g]; i++) {
      buffer* b = &all[g][i];
      if (b->dtype == XLA_FFI_DataType_TOKEN) continue;
      size_t used = round_up(b->bytes, ALIGN);
      unsigned char* guard = at + round_up(used, page);
      mprotect(guard, page, PROT_NONE);
      b->data = guard - used;
      b->slack = used - b->bytes;
      at = guard + page;
    }
  return 0;
}

/* Fills a buffer and its slack; the contents come from fill() or a byte. */
static void prepare(buffer* b, int byte, uint64_t seed, int specials) {
  if (b->data == NULL) return;
  if (byte < 0)
    fill(b->data, b->bytes, b->dtype, seed, specials);
  else
    memset(b->data, byte, b->bytes);
  memset(b->data + b->bytes, CANARY, b->slack);
}

/* The first byte past the end that a kernel wrote, or -1. */
static long overrun(const buffer* b) {
  for (size_t k = 0; b->data && k < b->slack; k++)
    if (b->data[b->bytes + k] != CANARY) return (long)(b->bytes + k);
  return -1;
}

/* --- Running one side in a child ---------------------------------------------- */

/* Loads a library and finds a symbol, in the child; NULL with BROKEN set. */
static void* load_symbol(const char* what, const char* lib, const char* symbol, side* out) {
  void* handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    out->state = BROKEN;
    snprintf(out->message, sizeof out->message, "%scannot load %s: %s", what, lib, dlerror());
    return NULL;
  }
  void* sym = dlsym(handle, symbol);
  if (sym == NULL) {
    out->state = BROKEN;
    snprintf(out->message, sizeof out->message, "%sno symbol '%s' in %s", what, symbol, lib);
  }
  return sym;
}

/* The kernel, and with --against the native handler, loaded in the child;
 * 0, or -1 with BROKEN set. */
static int load(const target* t, ccshim_legacy_fn* fn, XLA_FFI_Handler** handler, side* out) {
  void* sym = embedded.kernel ? embedded.kernel : load_symbol("", t->lib, t->symbol, out);
  if (sym == NULL) return -1;
  memcpy(fn, &sym, sizeof *fn);
  *handler = NULL;
  if (t->against_lib) {
    sym = load_symbol("--against: ", t->against_lib, t->against_symbol, out);
    if (sym == NULL) return -1;
    memcpy(handler, &sym, sizeof *handler);
  }
  out->loaded = 1;
  return 0;
}

static void run_legacy(const target* t, layout* l, side* out) {
  ccshim_legacy_fn fn;
  XLA_FFI_Handler* unused;
  if (load(t, &fn, &unused, out) != 0) return;
  size_t na = l->sig->num_arg_leaves, nr = l->sig->num_ret_leaves;
  void** args = calloc(na + 1, sizeof *args);
  void** rets = calloc(nr + 1, sizeof *rets);
  for (size_t i = 0; i < na; i++) args[i] = l->args[i].data;
  for (size_t i = 0; i < nr; i++) rets[i] = l->rets[0][i].data;
  if (embedded.reference) {
    void* kernel;
    memcpy(&kernel, &fn, sizeof kernel);
    char message[MESSAGE_CAP] = "";
    int rc = embedded.reference(kernel, t->api, t->signature, t->opaque, t->opaque_len, args, na,
                                rets, nr, message, sizeof message);
    if (rc != 0) {
      out->state = rc == 1 ? FAILED : BROKEN;
      set_message(out, message);
    }
    return;
  }
  ccshim_legacy_call c;
  memset(&c, 0, sizeof c);
  c.fn = fn;
  c.api_version = t->api;
  c.platform = t->platform;
  c.signature = l->sig;
  c.tuple_operands = t->tuple_operands;
  c.args = args;
  c.num_args = na;
  c.rets = rets;
  c.num_rets = nr;
  c.opaque = (const char*)t->opaque;
  c.opaque_len = t->opaque_len;
  ccshim_legacy_outcome o;
  if (ccshim_legacy_invoke(&c, &o) != CCSHIM_OK) {
    out->state = BROKEN;
    snprintf(out->message, sizeof out->message, "%s", ccshim_last_error());
    return;
  }
  if (o.failed) {
    out->state = FAILED;
    out->code = o.code;
    set_message(out, o.message);
  }
  ccshim_legacy_outcome_reset(&o);
}

/* Adds the --attr attributes to a frame. */
static ccshim_status add_attrs(const target* t, ccshim_frame_builder* fb) {
  for (int i = 0; i < t->num_attrs; i++) {
    const attr* a = &t->attrs[i];
    ccshim_status st;
    if (a->dtype == XLA_FFI_DataType_INVALID) { /* str */
      st = ccshim_frame_builder_add_string(fb, a->name, a->text, strlen(a->text));
    } else if (a->array) {
      /* Narrow to the element type's width, as an array attribute holds it. */
      size_t w = ccshim_dtype_bytes(a->dtype, 1, NULL);
      unsigned char bytes[ATTR_VALUES * 8];
      for (size_t k = 0; k < a->count; k++) {
        if (a->dtype == XLA_FFI_DataType_F32) {
          float f = (float)a->v.f[k];
          memcpy(bytes + k * 4, &f, 4);
        } else if (a->dtype == XLA_FFI_DataType_F64) {
          memcpy(bytes + k * 8, &a->v.f[k], 8);
        } else {
          memcpy(bytes + k * w, &a->v.u[k], w); /* little-endian low bytes */
        }
      }
      st = ccshim_frame_builder_add_array(fb, a->name, (XLA_FFI_DataType)a->dtype, bytes, a->count);
    } else {
      unsigned char bytes[8];
      if (a->dtype == XLA_FFI_DataType_F32) {
        float f = (float)a->v.f[0];
        memcpy(bytes, &f, 4);
      } else {
        memcpy(bytes, &a->v.u[0], 8);
      }
      st = ccshim_frame_builder_add_scalar(fb, a->name, (XLA_FFI_DataType)a->dtype, bytes);
    }
    if (st != CCSHIM_OK) return st;
  }
  return CCSHIM_OK;
}

static void run_typed(const target* t, layout* l, side* out) {
  ccshim_legacy_fn fn;
  XLA_FFI_Handler* native;
  if (load(t, &fn, &native, out) != 0) return;
  ccshim_adapter* a = NULL;
  ccshim_context* ctx;
  ccshim_frame_builder* fb;
  ccshim_context_options co = CCSHIM_CONTEXT_OPTIONS_INIT;
  co.platform = ccshim_platform_name(t->platform);
  XLA_FFI_Handler* handler = native;
  ccshim_wrap_options wo = CCSHIM_WRAP_OPTIONS_INIT;
  wo.tuple_operands = t->tuple_operands;
  if (native == NULL && ccshim_wrap(fn, t->api, t->platform, t->signature, &wo, &a) == CCSHIM_OK)
    handler = ccshim_adapter_handler(a);
  if (handler == NULL || ccshim_context_new(&co, &ctx) || ccshim_frame_builder_new(&fb)) {
    out->state = BROKEN;
    snprintf(out->message, sizeof out->message, "%s", ccshim_last_error());
    return;
  }
  for (size_t i = 0; i < l->sig->num_arg_leaves; i++) {
    const ccshim_shape* s = l->sig->arg_leaves[i];
    ccshim_frame_builder_add_arg(fb, (XLA_FFI_DataType)s->dtype, l->args[i].data, s->rank, s->dims);
  }
  for (size_t i = 0; i < l->sig->num_ret_leaves; i++) {
    const ccshim_shape* s = l->sig->ret_leaves[i];
    ccshim_frame_builder_add_ret(fb, (XLA_FFI_DataType)s->dtype, l->rets[1][i].data, s->rank,
                                 s->dims);
  }
  if (t->opaque_len && !t->against_lib)
    ccshim_frame_builder_add_array(fb, "opaque", XLA_FFI_DataType_U8, t->opaque, t->opaque_len);
  if (add_attrs(t, fb) != CCSHIM_OK) {
    out->state = BROKEN;
    snprintf(out->message, sizeof out->message, "--attr: %s", ccshim_last_error());
    return;
  }
  XLA_FFI_Error* err = NULL;
  ccshim_status st = ccshim_invoke_handler(handler, ctx, XLA_FFI_ExecutionStage_EXECUTE, fb, &err);
  if (st == CCSHIM_EHANDLER) {
    out->state = FAILED;
    out->code = (int)ccshim_error_code(err);
    set_message(out, ccshim_error_message(err));
  } else if (st != CCSHIM_OK) {
    out->state = BROKEN;
    snprintf(out->message, sizeof out->message, "%s", ccshim_last_error());
  }
  ccshim_error_free(err);
}

/* A file the child's stdout and stderr go to: not a pipe, so a process the
 * kernel leaves behind cannot hold the parent up.  -1 when none can be
 * made (the child's output then goes to /dev/null). */
static int capture_file(void) {
  FILE* f = tmpfile();
  if (f == NULL) return -1;
  int fd = dup(fileno(f));
  fclose(f);
  return fd;
}

/* What a child printed, read back from its capture file, or NULL. */
static char* captured(int fd, const char* who) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) return NULL;
  char buf[OUTPUT_SHOWN + 1];
  ssize_t n = pread(fd, buf, OUTPUT_SHOWN, 0);
  if (n <= 0) return NULL;
  buf[n] = '\0';
  for (ssize_t i = 0; i < n; i++)
    if (buf[i] == '\0') buf[i] = ' ';
  if ((off_t)n < st.st_size)
    return format("%s printed %lld bytes; the first %zd: %s", who, (long long)st.st_size, n, buf);
  return format("%s printed %lld bytes: %s", who, (long long)st.st_size, buf);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Waits for the child until the deadline, without reaping it; returns 1
 * when it ended, 0 at the deadline. */
static int wait_until(pid_t pid, double deadline) {
  long nap_ns = 100000; /* 0.1 ms, doubling to 10 ms */
  for (;;) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    int r = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && info.si_pid == pid) return 1;
    if (r < 0 && errno != EINTR) return 1; /* nothing to wait for */
    if (now_s() >= deadline) return 0;
    struct timespec nap = {0, nap_ns};
    nanosleep(&nap, NULL);
    if (nap_ns < 10000000) nap_ns *= 2;
  }
}

enum { RUN_LEGACY, RUN_TYPED, RUN_PROBE };

/* The probe: only loads the libraries, so that conform can say at once
 * that a library or a symbol is missing, or that a library's initialiser
 * crashes or exits. */
static void probe(const target* t, side* out) {
  ccshim_legacy_fn fn;
  XLA_FFI_Handler* handler;
  load(t, &fn, &handler, out);
}

/* Forks, runs one side (or the probe) in a child, and reads back how it
 * ended.  The child is the leader of its own process group; when it ends,
 * or at the deadline, the whole group is killed with SIGKILL before the
 * child is reaped (so its process group cannot be reused meanwhile).
 * `*output`, when it is NULL and the child printed something, gets a
 * description of it (owned by the caller). */
static void in_child(const target* t, layout* l, side* out, int what, char** output) {
  memset(out, 0, sizeof *out);
  int fd = capture_file();
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    out->state = BROKEN;
    snprintf(out->message, sizeof out->message, "fork: %s", strerror(errno));
    if (fd >= 0) close(fd);
    return;
  }
  if (pid == 0) {
    setpgid(0, 0);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) dup2(null, 0);
    if (fd < 0) fd = null;
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    if (what == RUN_TYPED)
      run_typed(t, l, out);
    else if (what == RUN_LEGACY)
      run_legacy(t, l, out);
    else
      probe(t, out);
    out->done = 1;
    fflush(NULL); /* what the kernel printed through stdio, into the capture */
    _exit(0);
  }
  setpgid(pid, pid); /* as the child does: whichever runs first */
  int ended = wait_until(pid, now_s() + t->timeout);
  kill(-pid, SIGKILL); /* the child at the deadline, and whatever it started */
  if (!ended) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const char* where = out->loaded ? "" : " while loading the library (in its initialiser)";
  if (!ended) {
    out->state = TIMED_OUT;
    snprintf(out->message, sizeof out->message, "timed out after %d s%s (killed)", t->timeout,
             where);
  } else if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    out->state = CRASHED;
    snprintf(out->message, sizeof out->message, "crashed: signal %d (%s)%s", sig, strsignal(sig),
             where);
  } else if (!out->done) {
    out->state = CRASHED;
    snprintf(out->message, sizeof out->message, "exited with status %d %s",
             WIFEXITED(status) ? WEXITSTATUS(status) : -1,
             out->loaded ? "inside the kernel" : where + 1);
  }
  if (output != NULL && *output == NULL)
    *output = captured(fd, what == RUN_PROBE   ? "loading the library"
                           : what == RUN_TYPED ? "the typed side"
                                               : "the legacy side");
  if (fd >= 0) close(fd);
}

/* --- One target ------------------------------------------------------------------ */

static const char* outcome(const side* s) { return s->state == RAN ? "ran" : s->message; }

/* Runs one target's K runs; the report says how they compared. */
static int compare_runs(const target* t, layout* l, side* sides, report* r) {
  size_t na = l->sig->num_arg_leaves, nr = l->sig->num_ret_leaves;
  for (int run = 0; run < t->runs; run++) {
    for (int which = 0; which < 2; which++) {
      /* Both sides get the same inputs, made afresh in case a kernel wrote
       * into one; and results that start as the same bytes, so that bytes
       * a kernel leaves unwritten compare equal. */
      for (size_t i = 0; i < na; i++)
        prepare(&l->args[i], -1, t->seed * 1000003u + (uint64_t)run * 7919u + i, run % 2);
      for (int f = 0; f < t->num_fixed; f++)
        if (t->fixed[f].len)
          memcpy(l->args[t->fixed[f].index].data, t->fixed[f].bytes, t->fixed[f].len);
      for (size_t i = 0; i < nr; i++) prepare(&l->rets[which][i], UNWRITTEN, 0, 0);
      in_child(t, l, &sides[which], which ? RUN_TYPED : RUN_LEGACY, &r->output);
      for (size_t i = 0; i < na + nr; i++) {
        const buffer* b = i < na ? &l->args[i] : &l->rets[which][i - na];
        long at = overrun(b);
        if (at >= 0) {
          set_detail(r,
                     "run %d: the %s side wrote byte %ld of %s %zu, which has %zu bytes "
                     "(does the signature match the kernel?)",
                     run, which ? "typed" : "legacy", at, i < na ? "argument" : "result",
                     i < na ? i : i - na, b->bytes);
          return 4;
        }
      }
    }
    const side* lg = &sides[0];
    const side* ty = &sides[1];
    if (lg->state >= CRASHED || ty->state >= CRASHED) {
      set_detail(r, "run %d: legacy %s; typed %s%s", run, outcome(lg), outcome(ty),
                 lg->state == CRASHED && ty->state == CRASHED
                     ? " (both crashed: does the signature match the kernel?)"
                     : "");
      return lg->state == BROKEN || ty->state == BROKEN ? 3 : 2;
    }
    if (lg->state == FAILED || ty->state == FAILED) {
      /* Failures compare as outcomes. */
      /* A port may choose a better error code than the legacy INTERNAL:
       * against one, failures compare by message. */
      /* Against XLA, the kernel's message is inside XLA's. */
      int alike = embedded.reference
                      ? lg->state == ty->state && strstr(lg->message, ty->message) != NULL
                      : lg->state == ty->state && (lg->code == ty->code || t->against_lib) &&
                            lg->message_len == ty->message_len &&
                            lg->message_hash == ty->message_hash &&
                            strcmp(lg->message, ty->message) == 0;
      if (alike) {
        r->equal++;
        r->failed++;
        continue;
      }
      set_detail(r, "run %d: legacy %s; typed %s", run,
                 lg->state == FAILED ? lg->message : "succeeded",
                 ty->state == FAILED ? ty->message : "succeeded");
      return 1;
    }
    for (size_t i = 0; i < nr; i++) {
      long first = compare(l->rets[0][i].data, l->rets[1][i].data, l->rets[0][i].bytes,
                           l->rets[0][i].dtype, t->rtol);
      if (first >= 0) {
        r->first_byte = first;
        r->first_result = i;
        set_detail(r, "run %d: result %zu differs first at byte %ld", run, i, first);
        return 1;
      }
    }
    r->equal++;
  }
  return 0;
}

static int check_target(target* t, report* r) {
  memset(r, 0, sizeof *r);
  r->first_byte = -1;
  r->symbol = format("%s", t->symbol);
  r->lib = format("%s", t->lib);
  snprintf(r->form, sizeof r->form, "%s", form_name(t->api, t->platform));
  r->signature = format("%s", t->signature);
  r->runs = t->runs;
  r->status = 3;
  if (t->api < 1 || t->api > 3) {
    set_detail(r, "--api %d: expected 1, 2 or 3", t->api);
    return 3;
  }
  if (t->platform != CCSHIM_PLATFORM_HOST) {
    set_detail(r, "--platform %s: conform runs CPU kernels (GPU kernels: tests/gpu/run.sh)",
               ccshim_platform_name(t->platform));
    return 3;
  }
  if (t->against_lib)
    snprintf(r->form + strlen(r->form), sizeof r->form - strlen(r->form), " vs typed");
  if (t->tuple_operands == CCSHIM_TUPLES_NESTED)
    snprintf(r->form + strlen(r->form), sizeof r->form - strlen(r->form), ", nested");
  /* The libraries are loaded only in children: first once, to say now that
   * one is missing or that its initialiser misbehaves. */
  side* loaded =
      mmap(NULL, sizeof(side), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (loaded == MAP_FAILED) {
    set_detail(r, "cannot map shared memory: %s", strerror(errno));
    return 3;
  }
  in_child(t, NULL, loaded, RUN_PROBE, &r->output);
  int load_state = loaded->state;
  if (load_state != RAN) set_detail(r, "%s", loaded->message);
  munmap(loaded, sizeof(side));
  if (load_state != RAN) return 3;
  layout l;
  memset(&l, 0, sizeof l);
  if (ccshim_signature_parse(t->signature, &l.sig) != CCSHIM_OK) {
    set_detail(r, "%s", ccshim_last_error());
    return 3;
  }
  if (!l.sig->is_static) {
    set_detail(r,
               "the signature has named or [...] dims; conform makes the buffers from the "
               "signature, so give it one concrete shape per buffer");
    ccshim_signature_free(l.sig);
    return 3;
  }
  size_t sig_len = ccshim_signature_format(l.sig, NULL, 0);
  char* canonical = malloc(sig_len + 1);
  if (canonical != NULL) {
    ccshim_signature_format(l.sig, canonical, sig_len + 1);
    free(r->signature);
    r->signature = canonical;
  }
  side* sides =
      mmap(NULL, 2 * sizeof(side), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sides == MAP_FAILED) {
    set_detail(r, "cannot map shared memory: %s", strerror(errno));
    ccshim_signature_free(l.sig);
    return 3;
  }
  char layout_error[256] = "";
  int ok = layout_init(&l, layout_error, sizeof layout_error) == 0;
  if (!ok) set_detail(r, "%s", layout_error);
  for (int f = 0; ok && f < t->num_fixed; f++) {
    size_t i = t->fixed[f].index;
    if (i < l.sig->num_arg_leaves && t->fixed[f].len == l.args[i].bytes) continue;
    char want[64] = "no such argument";
    if (i < l.sig->num_arg_leaves)
      snprintf(want, sizeof want, "argument %zu has %zu bytes", i, l.args[i].bytes);
    set_detail(r, "--arg-hex %zu: %zu bytes given, but %s", i, t->fixed[f].len, want);
    ok = 0;
  }
  if (ok) r->status = compare_runs(t, &l, sides, r);
  munmap(sides, 2 * sizeof(side));
  layout_free(&l);
  return r->status;
}

/* --- Arguments and manifests -------------------------------------------------------- */

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Frees what parsing a target allocated. */
static void target_reset(target* t) {
  free(t->opaque);
  for (int f = 0; f < t->num_fixed; f++) free(t->fixed[f].bytes);
  free(t->lib);
  free(t->symbol);
  free(t->signature);
  free(t->against_lib);
  free(t->against_symbol);
  memset(t, 0, sizeof *t);
}

/* A library path as conform loads it: relative to the manifest's folder
 * when one is given, and a bare name as a file here, not a search. */
static char* library_path(const char* base_dir, const char* v, size_t n) {
  if (v[0] != '/' && base_dir != NULL) return format("%s/%.*s", base_dir, (int)n, v);
  if (memchr(v, '/', n) == NULL) return format("./%.*s", (int)n, v);
  return format("%.*s", (int)n, v);
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

enum option_id {
  OPT_JSON,
  OPT_API,
  OPT_PLATFORM,
  OPT_SIGNATURE,
  OPT_OPAQUE_HEX,
  OPT_ARG_HEX,
  OPT_OPAQUE_FILE,
  OPT_SEED,
  OPT_RUNS,
  OPT_RTOL,
  OPT_AGAINST,
  OPT_ATTR,
  OPT_TIMEOUT,
  OPT_TUPLE_OPERANDS,
};

/* conform's options: the parser and --help read this one table. */
typedef struct option_spec {
  const char* name;
  const char* value; /* the value's placeholder, or NULL for a flag */
  enum option_id id;
  const char* help;
} option_spec;

static const option_spec option_specs[] = {
    {"--json", NULL, OPT_JSON, "the report as JSON"},
    {"--api", "N", OPT_API, "1, 2 or 3: the kernel's legacy API version (required)"},
    {"--platform", "P", OPT_PLATFORM, "cpu: conform runs CPU kernels (GPU: tests/gpu/run.sh)"},
    {"--signature", "SIG", OPT_SIGNATURE,
     "its buffers, e.g. '(f32[128], f32[2048]) -> f32[2048]' (required)"},
    {"--opaque-hex", "HEX", OPT_OPAQUE_HEX, "the opaque (backend config) bytes"},
    {"--arg-hex", "I=HEX", OPT_ARG_HEX, "fix argument I to these bytes (dims, flags)"},
    {"--opaque-file", "F", OPT_OPAQUE_FILE, "the opaque bytes, read from a file (at most 64 MiB)"},
    {"--seed", "S", OPT_SEED, "the inputs' seed (default 1)"},
    {"--runs", "K", OPT_RUNS, "runs, each side every run (default 3)"},
    {"--rtol", "R", OPT_RTOL, "compare floats within R instead of byte for byte"},
    {"--against", "LIB2:HANDLER", OPT_AGAINST, "a native typed-FFI port instead of the adapter"},
    {"--attr", "NAME=TYPE:VALUE", OPT_ATTR, "an attribute for the port (TYPE[] for arrays, str)"},
    {"--timeout", "SECONDS", OPT_TIMEOUT, "each side's deadline, then SIGKILL (default 60)"},
    {"--tuple-operands", "flat|nested", OPT_TUPLE_OPERANDS,
     "tuple operands in in[]: their leaves (XLA's CPU runtime since jaxlib 0.4.32, the "
     "default) or a pointer table each (the classic CPU convention)"},
};

static const option_spec* find_option(const char* name) {
  for (size_t k = 0; k < sizeof option_specs / sizeof option_specs[0]; k++)
    if (!strcmp(option_specs[k].name, name)) return &option_specs[k];
  return NULL;
}

/* Parses one target's words; returns 0 or writes a one-line error. */
static int parse_target(int argc, char** argv, const char* base_dir, target* t, int* json,
                        char* err, size_t cap) {
  memset(t, 0, sizeof *t);
  t->platform = CCSHIM_PLATFORM_HOST;
  t->seed = 1;
  t->runs = 3;
  t->timeout = 60;
  int positional = 0;
  for (int i = 0; i < argc; i++) {
    const char* a = argv[i];
    if (a[0] == '-' && a[1] == '-') {
      const option_spec* o = find_option(a);
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
      switch (o->id) {
        case OPT_JSON: {
          if (json) *json = 1;
          break;
        }
        case OPT_API: {
          if (integer(a, v, 1, 3, &t->api, err, cap)) return -1;
          break;
        }
        case OPT_PLATFORM: {
          if (ccshim_platform_parse(v, &t->platform) != CCSHIM_OK) {
            snprintf(err, cap, "%s", ccshim_last_error());
            return -1;
          }
          break;
        }
        case OPT_SIGNATURE: {
          free(t->signature);
          t->signature = format("%s", v);
          break;
        }
        case OPT_OPAQUE_HEX: {
          free(t->opaque);
          t->opaque = NULL;
          if (hex_bytes(a, v, &t->opaque, &t->opaque_len, err, cap)) return -1;
          break;
        }
        case OPT_ARG_HEX: {
          char* end;
          errno = 0;
          unsigned long index = strtoul(v, &end, 10);
          if (end == v || *end != '=' || errno) {
            snprintf(err, cap, "--arg-hex %s: expected I=HEX, the argument's index and its bytes",
                     v);
            return -1;
          }
          if (t->num_fixed == MAX_ATTRS) {
            snprintf(err, cap, "--arg-hex: at most %d arguments", MAX_ATTRS);
            return -1;
          }
          t->fixed[t->num_fixed].index = index;
          if (hex_bytes(a, end + 1, &t->fixed[t->num_fixed].bytes, &t->fixed[t->num_fixed].len, err,
                        cap))
            return -1;
          t->num_fixed++;
          break;
        }
        case OPT_OPAQUE_FILE: {
          FILE* f = fopen(v, "rb");
          if (f == NULL) {
            snprintf(err, cap, "--opaque-file %s: %s", v, strerror(errno));
            return -1;
          }
          free(t->opaque);
          t->opaque = NULL;
          t->opaque_len = 0;
          size_t cap2 = 0, got = 0;
          do {
            t->opaque_len += got;
            if (t->opaque_len > OPAQUE_FILE_MAX) {
              fclose(f);
              snprintf(err, cap,
                       "--opaque-file %s: more than %d MiB; an opaque (a backend "
                       "config) is at most that here",
                       v, OPAQUE_FILE_MAX >> 20);
              return -1;
            }
            if (t->opaque_len == cap2) {
              unsigned char* grown = realloc(t->opaque, cap2 = cap2 ? 2 * cap2 : 4096);
              if (grown == NULL) {
                fclose(f);
                snprintf(err, cap, "--opaque-file %s: out of memory at %zu bytes", v, cap2);
                return -1;
              }
              t->opaque = grown;
            }
          } while ((got = fread(t->opaque + t->opaque_len, 1, cap2 - t->opaque_len, f)) > 0);
          int failed = ferror(f);
          fclose(f);
          if (failed) {
            snprintf(err, cap, "--opaque-file %s: read error", v);
            return -1;
          }
          break;
        }
        case OPT_SEED: {
          char* end;
          errno = 0;
          t->seed = strtoull(v, &end, 0);
          if (errno || end == v || *end) {
            snprintf(err, cap, "--seed %s: expected an unsigned integer", v);
            return -1;
          }
          break;
        }
        case OPT_RUNS: {
          if (integer(a, v, 1, 100000, &t->runs, err, cap)) return -1;
          break;
        }
        case OPT_RTOL: {
          char* end;
          t->rtol = strtod(v, &end);
          if (end == v || *end || !(t->rtol >= 0)) {
            snprintf(err, cap, "--rtol %s: expected a number >= 0", v);
            return -1;
          }
          break;
        }
        case OPT_AGAINST: {
          const char* colon = strrchr(v, ':');
          if (colon == NULL || colon == v || colon[1] == '\0') {
            snprintf(err, cap, "--against %s: expected LIB:HANDLER_SYMBOL", v);
            return -1;
          }
          free(t->against_lib);
          free(t->against_symbol);
          t->against_lib = library_path(base_dir, v, (size_t)(colon - v));
          t->against_symbol = format("%s", colon + 1);
          break;
        }
        case OPT_ATTR: {
          if (t->num_attrs == MAX_ATTRS) {
            snprintf(err, cap, "--attr: at most %d attributes", MAX_ATTRS);
            return -1;
          }
          if (parse_attr(v, &t->attrs[t->num_attrs], err, cap) != 0) return -1;
          t->num_attrs++;
          break;
        }
        case OPT_TIMEOUT: {
          if (integer(a, v, 1, 86400, &t->timeout, err, cap)) return -1;
          break;
        }
        case OPT_TUPLE_OPERANDS: {
          if (strcmp(v, "flat") != 0 && strcmp(v, "nested") != 0) {
            snprintf(err, cap, "%s %s: expected flat or nested", a, v);
            return -1;
          }
          t->tuple_operands = v[0] == 'n' ? CCSHIM_TUPLES_NESTED : CCSHIM_TUPLES_FLAT;
          break;
        }
      }
    } else if (positional == 0) {
      t->lib = library_path(base_dir, a, strlen(a));
      positional++;
    } else if (positional == 1) {
      t->symbol = format("%s", a);
      positional++;
    } else {
      snprintf(err, cap, "unexpected argument '%s'", a);
      return -1;
    }
  }
  if (positional < 2) {
    snprintf(err, cap, "expected LIB SYMBOL");
    return -1;
  }
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
  return 0;
}

/* Splits a manifest line into words: blanks separate, quotes group, '#'
 * outside quotes ends the line. */
static int split_words(char* line, char** words, int max) {
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

/* --- Output ---------------------------------------------------------------------------- */

static const char* status_word(int s) {
  static const char* const words[] = {"equal", "DIFFER", "CRASHED", "ERROR", "OVERRAN"};
  return words[s];
}

static const char* json_status(int s) {
  static const char* const words[] = {"equal", "differ", "crashed", "error", "overran"};
  return words[s];
}

static void print_reports(const report* r, int n, int json) {
  if (json) {
    int all = 1;
    printf("{\n  \"targets\": [\n");
    for (int i = 0; i < n; i++) {
      all &= r[i].status == 0;
      printf("    {\"target\": ");
      ccshim_tool_json_string(stdout, r[i].symbol);
      printf(", \"library\": ");
      ccshim_tool_json_string(stdout, r[i].lib);
      printf(", \"form\": ");
      ccshim_tool_json_string(stdout, r[i].form);
      printf(", \"signature\": ");
      ccshim_tool_json_string(stdout, r[i].signature);
      printf(", \"runs\": %d, \"equal\": %d, \"both_failed\": %d, \"status\": \"%s\"", r[i].runs,
             r[i].equal, r[i].failed, json_status(r[i].status));
      if (r[i].first_byte >= 0)
        printf(", \"first_difference\": {\"result\": %zu, \"byte\": %ld}", r[i].first_result,
               r[i].first_byte);
      printf(", \"detail\": ");
      ccshim_tool_json_string(stdout, r[i].detail ? r[i].detail : "");
      if (r[i].output) {
        printf(", \"kernel_output\": ");
        ccshim_tool_json_string(stdout, r[i].output);
      }
      printf("}%s\n", i + 1 < n ? "," : "");
    }
    printf("  ],\n  \"reference\": ");
    ccshim_tool_json_string(stdout, reference_name());
    printf(",\n  \"all_equal\": %s\n}\n", all ? "true" : "false");
    return;
  }
  int wt = 6, wf = 4, ws = 9;
  for (int i = 0; i < n; i++) {
    int a = (int)strlen(r[i].symbol), f = (int)strlen(r[i].form), b = (int)strlen(r[i].signature);
    wt = a > wt ? a : wt;
    wf = f > wf ? f : wf;
    ws = b > ws ? b : ws;
  }
  wt = wt > 40 ? 40 : wt;
  ws = ws > 60 ? 60 : ws;
  printf("%-*s  %-*s  %-*s  %4s  %5s  %6s  %s\n", wt, "target", wf, "form", ws, "signature", "runs",
         "equal", "failed", "result");
  int equal = 0;
  for (int i = 0; i < n; i++) {
    printf("%-*s  %-*s  %-*s  %4d  %5d  %6d  %s%s%s\n", wt, r[i].symbol, wf, r[i].form, ws,
           r[i].signature, r[i].runs, r[i].equal, r[i].failed, status_word(r[i].status),
           r[i].detail ? ": " : "", r[i].detail ? r[i].detail : "");
    if (r[i].output) printf("    (%s)\n", r[i].output);
    equal += r[i].status == 0;
  }
  printf("%d of %d targets equal (failed: runs where both sides failed alike)\n", equal, n);
  printf("reference: %s\n", reference_name());
}

/* --help: the usage, the options from option_specs, examples. */
static void print_usage(FILE* to) {
  fputs(
      "usage: ccshim conform LIB SYMBOL --api N --signature SIG [options]\n"
      "       ccshim conform --python MODULE[:ATTR] [NAME] [--init FUNC] --api N\n"
      "                      --signature SIG [options]\n"
      "       ccshim conform --manifest FILE [--json]\n"
      "       (any of these with --reference xla)\n"
      "\n"
      "Runs a legacy kernel through XLA's legacy convention (ccshim's invoker) and\n"
      "through an adapter in the embedded typed runtime, each side in a child process\n"
      "that alone loads LIB, on the same deterministic inputs, and compares results.\n"
      "\n"
      "  --python MODULE[:ATTR] [NAME]\n"
      "                              the kernel as a project ships it: a capsule from a\n"
      "                              Python extension (MODULE: a name, or a path to a .so\n"
      "                              or .py) -- its registrations()[NAME], or ATTR (a\n"
      "                              capsule, or a mapping and NAME); run in $CCSHIM_PYTHON\n"
      "                              (python3), so kernels that need the interpreter work\n"
      "  --init FUNC                 call MODULE.FUNC() first (jaxlib's _lapack: initialize)\n"
      "  --reference xla|invoker     the legacy side: ccshim's invoker (the default), or\n"
      "                              XLA's own legacy custom-call path in jaxlib, so that\n"
      "                              equal means equal to XLA (Python with JAX)\n"
      "\n",
      to);
  for (size_t k = 0; k < sizeof option_specs / sizeof option_specs[0]; k++) {
    const option_spec* o = &option_specs[k];
    char head[64];
    snprintf(head, sizeof head, "%s%s%s", o->name, o->value ? " " : "", o->value ? o->value : "");
    fprintf(to, "  %-27s %s\n", head, o->help);
  }
  fputs(
      "\n"
      "A manifest has one target a line in the same words ('#' comments, quotes group).\n"
      "Exit status: 0 all equal, 1 a target differs or failed, 2 the command is wrong.\n"
      "\n"
      "examples:\n"
      "  ccshim conform ./libk.so add_v2 --api 2 --signature '(f32[4], f32[4]) -> f32[4]'\n"
      "  ccshim conform ./libk.so add_v3 --api 3 --signature '(f32[8]) -> f32[8]' \\\n"
      "      --opaque-hex 0000c03f --runs 10 --json\n"
      "  ccshim conform --manifest kernels.manifest\n"
      "  ccshim conform --python jaxlib/cpu/_lapack.so lapack_spotrf --init initialize \\\n"
      "      --api 2 --signature '(s32[], s32[], s32[], f32[4,4]) -> (f32[4,4], s32[])' \\\n"
      "      --arg-hex 0=00000000 --arg-hex 1=01000000 --arg-hex 2=04000000\n"
      "  ccshim conform --manifest kernels.manifest --reference xla\n",
      to);
}

/* A manifest line of any length up to MANIFEST_LINE_MAX, in *buf (grown);
 * returns its length, -1 at the end, -2 for a line longer than that, -3 for
 * a NUL byte (not a text file), -4 for a read error. */
enum { MANIFEST_LINE_MAX = 1 << 20 };
static long read_line(FILE* f, char** buf, size_t* cap) {
  size_t n = 0;
  int c;
  while ((c = getc(f)) != EOF) {
    if (c == '\0') return -3;
    if (n + 2 > *cap) {
      if (n >= MANIFEST_LINE_MAX) return -2;
      size_t want = *cap ? 2 * *cap : 256;
      char* grown = realloc(*buf, want);
      if (grown == NULL) return -2;
      *buf = grown;
      *cap = want;
    }
    (*buf)[n++] = (char)c;
    if (c == '\n') break;
  }
  if (ferror(f)) return -4;
  if (n == 0 && c == EOF) return -1;
  (*buf)[n] = '\0';
  return (long)n;
}

/* Runs (or, with parse_only, only parses) every target of a manifest and
 * prints one report; the exit status.  Lines of any length up to
 * MANIFEST_LINE_MAX; a longer one or a NUL byte ends it with exit 2. */
static int run_manifest(FILE* f, const char* manifest, int json, int parse_only) {
  char err[1200];
  const char* slash = strrchr(manifest, '/');
  char* dir = slash ? format("%.*s", (int)(slash - manifest), manifest) : format(".");
  if (dir[0] == '\0') {
    free(dir);
    dir = format("/");
  }
  report* reports = NULL;
  int n = 0, worst = 0, lineno = 0;
  char* line = NULL;
  size_t cap = 0;
  long len;
  while ((len = read_line(f, &line, &cap)) != -1) {
    lineno++;
    if (len < 0) {
      fprintf(stderr, "ccshim conform: manifest %s, line %d: %s\n", manifest, lineno,
              len == -2   ? "longer than 1 MiB (is it a manifest?)"
              : len == -3 ? "holds a NUL byte; expected a text file"
                          : strerror(errno));
      for (int i = 0; i < n; i++) report_reset(&reports[i]);
      free(reports);
      free(line);
      free(dir);
      return 2;
    }
    int max_words = (int)(len / 2 + 1);
    char** words = need(malloc((size_t)max_words * sizeof *words));
    int nw = split_words(line, words, max_words);
    if (nw == 0) {
      free(words);
      continue;
    }
    reports = need(realloc(reports, (size_t)(n + 1) * sizeof *reports));
    report* r = &reports[n++];
    target t;
    memset(&t, 0, sizeof t);
    if (nw < 0 || parse_target(nw, words, dir, &t, NULL, err, sizeof err) != 0) {
      target_reset(&t);
      memset(r, 0, sizeof *r);
      r->first_byte = -1;
      r->symbol = format("line %d", lineno);
      r->lib = format("%s", manifest);
      r->signature = format("%s", "");
      set_detail(r, "%s", nw == -2 ? "unclosed quote" : err);
      r->status = 3;
      worst = 3;
      free(words);
      continue;
    }
    free(words);
    if (parse_only) {
      memset(r, 0, sizeof *r);
      target_reset(&t);
      continue;
    }
    int status = check_target(&t, r);
    target_reset(&t);
    if (status > worst) worst = status;
  }
  free(line);
  free(dir);
  if (n == 0) {
    fprintf(stderr, "ccshim conform: manifest %s names no target\n", manifest);
    return 2;
  }
  if (parse_only) {
    for (int i = 0; i < n; i++) report_reset(&reports[i]);
    free(reports);
    return worst == 0 ? 0 : 1;
  }
  print_reports(reports, n, json);
  for (int i = 0; i < n; i++) report_reset(&reports[i]);
  free(reports);
  return worst == 0 ? 0 : 1;
}

/* Options that take Python (ccshim.conform): a kernel from a Python module,
 * and XLA as the reference. */
static int wants_python(int argc, char** argv) {
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "--python") || !strcmp(argv[i], "--reference") ||
        !strcmp(argv[i], "--init"))
      return 1;
  return 0;
}

int ccshim_conform_embedded(void* kernel, ccshim_conform_reference_fn reference, const char* name,
                            int argc, char** argv) {
  embedded.kernel = kernel;
  embedded.reference = reference;
  embedded.reference_name = name ? name : "the reference";
  int rc = ccshim_conform_main(argc, argv);
  memset(&embedded, 0, sizeof embedded);
  fflush(NULL);
  return rc;
}

int ccshim_conform_main(int argc, char** argv) {
  char err[1200];
  int json = 0;
  const char* manifest = NULL;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      print_usage(stdout);
      return 0;
    }
  }
  if (wants_python(argc, argv)) return ccshim_python_main("conform", "ccshim.conform", argc, argv);
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--manifest")) {
      if (i + 1 == argc) {
        fprintf(stderr, "ccshim conform: --manifest needs a file\n");
        return 2;
      }
      manifest = argv[i + 1];
    }
    if (!strcmp(argv[i], "--json")) json = 1;
  }
  if (manifest == NULL) {
    target t;
    if (parse_target(argc, argv, NULL, &t, &json, err, sizeof err) != 0) {
      target_reset(&t);
      fprintf(stderr, "ccshim conform: %s\n", err);
      return 2;
    }
    report r;
    int st = check_target(&t, &r);
    target_reset(&t);
    if (st == 3 && !json) {
      fprintf(stderr, "ccshim conform: %s\n", r.detail ? r.detail : "error");
      if (r.output) fprintf(stderr, "ccshim conform: (%s)\n", r.output);
      report_reset(&r);
      return 2;
    }
    print_reports(&r, 1, json);
    report_reset(&r);
    return st == 0 ? 0 : st == 3 ? 2 : 1;
  }

  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--manifest")) {
      i++;
    } else if (strcmp(argv[i], "--json")) {
      fprintf(stderr,
              "ccshim conform: with --manifest, only --json may follow (got '%s'); options "
              "of a target go on its line\n",
              argv[i]);
      return 2;
    }
  }
  FILE* f = fopen(manifest, "r");
  if (f == NULL) {
    fprintf(stderr, "ccshim conform: cannot read manifest %s: %s\n", manifest, strerror(errno));
    return 2;
  }
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    fprintf(stderr, "ccshim conform: manifest %s is a directory; expected a text file\n", manifest);
    fclose(f);
    return 2;
  }
  int rc = run_manifest(f, manifest, json, 0);
  fclose(f);
  return rc;
}

int ccshim_conform_parse_manifest(const char* data, size_t len) {
  FILE* f = fmemopen((void*)data, len, "r");
  if (f == NULL) return 2;
  int rc = run_manifest(f, "fuzz.manifest", 0, 1);
  fclose(f);
  return rc;
}
