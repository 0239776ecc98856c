/*
 * `ccshim bench`: what a call through an adapter costs, against the floor and
 * against a typed handler written by hand, for the same trivial legacy
 * kernel on the same prebuilt call frame.
 *
 *   B0  the legacy kernel called directly with a ready void** (the floor);
 *   B1  a hand-written C typed handler for the kernel: metadata check, stage
 *       check, counts, pointers onto the stack, the opaque found by name,
 *       the stream from Stream_Get (GPU), the call, status to error;
 *   B1x the maintainer's port: a typed handler for the kernel written with
 *       XLA's C++ bindings (xla/ffi/api/ffi.h), each buffer an
 *       Arg<AnyBuffer> (the arguments as RemainingArgs at 16 and 64), the
 *       opaque an Attr<std::string_view>, the stream from PlatformStream
 *       (bench/bench_ffi.cc); built where jaxlib's headers are given
 *       (CCSHIM_JAXLIB_INCLUDE), else the bench says it is absent and why;
 *   B2  the ccshim adapter (prebuilt entry; and the libffi closure);
 *   P   the handler `ccshim port` writes for the kernel (its
 *       xla_legacy_call.h over RemainingArgs and RemainingRets; on GPU the
 *       opaque a u8 array, in a frame of its own), built with B1x
 *       (bench/bench_port.cc); none for cpu_v3, which the port refuses;
 *       P where the call sites fix the counts, Pr where they are known
 *       only at run time;
 *   B1r Pr's reference: the maintainer's ffi.h port of the kernel where the
 *       counts are known only at run time (RemainingArgs, RemainingRets,
 *       each buffer by get<AnyBuffer>(i)), built with B1x.
 *
 * Per call it reports instructions (callgrind, repeatable on a noisy
 * machine: the program re-runs itself under valgrind) and nanoseconds
 * (the median of interleaved runs, with their quartiles and range), for CPU
 * v1, v2, v3 and the GPU form at 1, 4, 16 and 64 buffers; then two-thread
 * scaling, the cost of wrapping, and an adapter's footprint.  It prints a
 * table and writes JSON, both saying which build (type, compiler, flags)
 * the figures come from: B1 and B2 are compiled by the same compiler with
 * the same flags, in one build, and B1x by that toolchain's C++ compiler.
 * Every variant reads the same frame, its opaque a string attribute (what
 * ffi.h's Attr<std::string_view> decodes; B1 and the adapter take a u8
 * array too).
 */
#include "bench.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define HAVE_CALLGRIND 1
#else
#define HAVE_CALLGRIND 0
#define CALLGRIND_TOGGLE_COLLECT
#define CALLGRIND_DUMP_STATS_AT(x)
#endif

#include "bench_ffi.h"
#include "bench_report.h"
#include "ccshim/ccshim.h"
#include "tools.h"

/* B1x, P and B1r not built: no handlers (the table says why). */
#if !CCSHIM_BENCH_HAVE_FFI
ccshim_bench_ffi_handler* ccshim_bench_ffi(int form, int buffers) {
  (void)form;
  (void)buffers;
  return NULL;
}
ccshim_bench_ffi_handler* ccshim_bench_port(int form, int buffers, int fixed) {
  (void)form;
  (void)buffers;
  (void)fixed;
  return NULL;
}
ccshim_bench_ffi_handler* ccshim_bench_ffi_rt(int form) {
  (void)form;
  return NULL;
}
#endif

/* --- The trivial legacy kernel, in each form --------------------------------- */

/* Per thread, so that two threads calling the kernel do not share the line
 * it writes: the benchmark measures the adapter, not cache-line traffic. */
static _Thread_local void* volatile bench_sink;

static void triv_cpu_v1(void* out, const void** in) {
  bench_sink = out;
  (void)in;
}
static void triv_cpu_v2(void* out, const void** in, XlaCustomCallStatus* status) {
  bench_sink = out;
  (void)in;
  (void)status;
}
static void triv_cpu_v3(void* out, const void** in, const char* opaque, size_t len,
                        XlaCustomCallStatus* status) {
  bench_sink = out;
  (void)in;
  (void)opaque;
  (void)len;
  (void)status;
}
static void triv_gpu(void* stream, void** buffers, const char* opaque, size_t len,
                     XlaCustomCallStatus* status) {
  bench_sink = buffers;
  (void)stream;
  (void)opaque;
  (void)len;
  (void)status;
}

/* Every caller (B0, B1 and the adapters) reaches the kernel through a
 * pointer the compiler cannot see through, so that each makes a real call,
 * as from XLA, and no caller's argument set-up is optimised away. */
void (*volatile ccshim_bench_k_v1)(void*, const void**) = triv_cpu_v1;
void (*volatile ccshim_bench_k_v2)(void*, const void**, XlaCustomCallStatus*) = triv_cpu_v2;
void (*volatile ccshim_bench_k_v3)(void*, const void**, const char*, size_t,
                                   XlaCustomCallStatus*) = triv_cpu_v3;
void (*volatile ccshim_bench_k_gpu)(void*, void**, const char*, size_t,
                                    XlaCustomCallStatus*) = triv_gpu;

/* --- B1: what a careful engineer porting the kernel by hand would write -------
 *
 * A handler written in C against XLA's FFI C API (xla/ffi/api/c_api.h, as
 * ccshim declares it), not with the C++ bindings of xla/ffi/api/ffi.h, for
 * one kernel at one arity, which makes the same checks
 * of the frame that the adapter makes, so that the two are compared on the
 * same work (a malformed frame gets INVALID_ARGUMENT from either, never a
 * crash):
 *   1. the frame's struct_size (>= 168);
 *   2. a metadata query answered (version and traits), nothing else read;
 *   3. a stage other than execute: nothing to do;
 *   4. an API table (without one no error can be made through the caller's
 *      runtime; both refuse through ccshim's own table);
 *   5. the argument and result counts, as the port was written for;
 *   6. the argument and result arrays, each buffer pointer and each data
 *      pointer non-NULL;
 *   7. v3 and GPU: the opaque attribute found by name, its type (a string
 *      or a u8/s8 array) and length checked, and copied with a NUL after
 *      its last byte (kernels may read it as a C string; a ByteSpan has no
 *      terminator);
 *   8. GPU: the stream from Stream_Get;
 *   9. the call, and a failed status made an INTERNAL error.
 * It checks no dtype and no dims: the adapter measured here has no
 * signature either. */

static int b1_nargs, b1_nrets; /* the counts the port was written for */

static XLA_FFI_Error* b1_error(const XLA_FFI_Api* api, XLA_FFI_Error_Code code,
                               const char* message) {
  XLA_FFI_Error_Create_Args a = {XLA_FFI_Error_Create_Args_STRUCT_SIZE, NULL, message, code};
  return api->XLA_FFI_Error_Create(&a);
}

/* Checks 1 to 5; returns 1 when the call is done (*ret says how). */
static int b1_preamble(XLA_FFI_CallFrame* f, XLA_FFI_Error** ret) {
  *ret = NULL;
  const XLA_FFI_Api* api = f->api ? f->api : ccshim_ffi_api();
  if (f->struct_size < XLA_FFI_CallFrame_STRUCT_SIZE) {
    *ret = b1_error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "frame size");
    return 1;
  }
  XLA_FFI_InternalExtension* ext = f->extension_start;
  if (ext != NULL && ext->type == XLA_FFI_Extension_Metadata) {
    XLA_FFI_Metadata* md = ((XLA_FFI_Metadata_Extension*)ext)->metadata;
    md->api_version.major_version = 0;
    md->api_version.minor_version = 1;
    md->traits = 0;
    return 1;
  }
  if (f->stage != XLA_FFI_ExecutionStage_EXECUTE) return 1;
  if (f->api == NULL || f->args.size != b1_nargs || f->rets.size != b1_nrets) {
    *ret = b1_error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "no api, or wrong counts");
    return 1;
  }
  return 0;
}

/* Check 6 for one side: n data pointers into dst; 0 when one is NULL. */
static int b1_gather(void** dst, void** buffers, int n) {
  if (n > 0 && buffers == NULL) return 0;
  for (int i = 0; i < n; i++) {
    const XLA_FFI_Buffer* b = buffers[i];
    if (b == NULL || b->data == NULL) return 0;
    dst[i] = b->data;
  }
  return 1;
}

/* Check 7: the opaque attribute, NUL-terminated into buf (cap bytes). */
static int b1_opaque(XLA_FFI_CallFrame* f, char* buf, size_t cap, size_t* len) {
  *len = 0;
  buf[0] = '\0';
  const XLA_FFI_Attrs* at = &f->attrs;
  if (at->size == 0) return 1;
  if (at->size < 0 || at->names == NULL || at->types == NULL || at->attrs == NULL) return 0;
  for (int64_t i = 0; i < at->size; i++) {
    const XLA_FFI_ByteSpan* n = at->names[i];
    if (n == NULL || n->len != 6 || memcmp(n->ptr, "opaque", 6) != 0) continue;
    const void* v = at->attrs[i];
    const char* ptr;
    size_t l;
    if (v == NULL) return 0;
    if (at->types[i] == XLA_FFI_AttrType_STRING) {
      ptr = ((const XLA_FFI_ByteSpan*)v)->ptr;
      l = ((const XLA_FFI_ByteSpan*)v)->len;
    } else if (at->types[i] == XLA_FFI_AttrType_ARRAY &&
               (((const XLA_FFI_Array*)v)->dtype == XLA_FFI_DataType_U8 ||
                ((const XLA_FFI_Array*)v)->dtype == XLA_FFI_DataType_S8)) {
      ptr = ((const XLA_FFI_Array*)v)->data;
      l = ((const XLA_FFI_Array*)v)->size;
    } else {
      return 0;
    }
    if (l >= cap || (ptr == NULL && l > 0)) return 0;
    memcpy(buf, ptr, l);
    buf[l] = '\0';
    *len = l;
    return 1;
  }
  return 1;
}

static XLA_FFI_Error* b1_bad_frame(XLA_FFI_CallFrame* f) {
  return b1_error(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "malformed frame");
}

static XLA_FFI_Error* b1_status(const XLA_FFI_Api* api, XlaCustomCallStatus* s) {
  size_t len;
  const char* msg = ccshim_legacy_status_message(s, &len);
  if (msg == NULL) return NULL;
  XLA_FFI_Error* e = b1_error(api, XLA_FFI_Error_Code_INTERNAL, msg);
  ccshim_legacy_status_reset(s);
  return e;
}

enum { B1_OPAQUE = 256 };

static XLA_FFI_Error* b1_cpu_v1(XLA_FFI_CallFrame* f) {
  XLA_FFI_Error* ret;
  if (b1_preamble(f, &ret)) return ret;
  void* in[MAX_BUFFERS];
  void* out[1];
  if (!b1_gather(in, f->args.args, b1_nargs) || !b1_gather(out, f->rets.rets, 1))
    return b1_bad_frame(f);
  ccshim_bench_k_v1(out[0], (const void**)in);
  return NULL;
}

static XLA_FFI_Error* b1_cpu_v2(XLA_FFI_CallFrame* f) {
  XLA_FFI_Error* ret;
  if (b1_preamble(f, &ret)) return ret;
  void* in[MAX_BUFFERS];
  void* out[1];
  if (!b1_gather(in, f->args.args, b1_nargs) || !b1_gather(out, f->rets.rets, 1))
    return b1_bad_frame(f);
  ccshim_legacy_status_storage st;
  XlaCustomCallStatus* s = ccshim_legacy_status_init(&st);
  ccshim_bench_k_v2(out[0], (const void**)in, s);
  return b1_status(f->api, s);
}

static XLA_FFI_Error* b1_cpu_v3(XLA_FFI_CallFrame* f) {
  XLA_FFI_Error* ret;
  if (b1_preamble(f, &ret)) return ret;
  void* in[MAX_BUFFERS];
  void* out[1];
  char opaque[B1_OPAQUE];
  size_t len;
  if (!b1_gather(in, f->args.args, b1_nargs) || !b1_gather(out, f->rets.rets, 1) ||
      !b1_opaque(f, opaque, sizeof opaque, &len))
    return b1_bad_frame(f);
  ccshim_legacy_status_storage st;
  XlaCustomCallStatus* s = ccshim_legacy_status_init(&st);
  ccshim_bench_k_v3(out[0], (const void**)in, opaque, len, s);
  return b1_status(f->api, s);
}

static XLA_FFI_Error* b1_gpu(XLA_FFI_CallFrame* f) {
  XLA_FFI_Error* ret;
  if (b1_preamble(f, &ret)) return ret;
  void* buffers[MAX_BUFFERS];
  char opaque[B1_OPAQUE];
  size_t len;
  if (!b1_gather(buffers, f->args.args, b1_nargs) ||
      !b1_gather(buffers + b1_nargs, f->rets.rets, b1_nrets) ||
      !b1_opaque(f, opaque, sizeof opaque, &len))
    return b1_bad_frame(f);
  XLA_FFI_Stream_Get_Args sa = {XLA_FFI_Stream_Get_Args_STRUCT_SIZE, NULL, f->ctx, NULL};
  if ((ret = f->api->XLA_FFI_Stream_Get(&sa)) != NULL) return ret;
  ccshim_legacy_status_storage st;
  XlaCustomCallStatus* s = ccshim_legacy_status_init(&st);
  ccshim_bench_k_gpu(sa.stream, buffers, opaque, len, s);
  return b1_status(f->api, s);
}

/* --- One configuration: a form at an arity, its frame and its three callers --- */

typedef struct config {
  int form, arity;
  float data[MAX_BUFFERS][4];
  ccshim_context* ctx;
  ccshim_frame_builder* fb;
  XLA_FFI_CallFrame frame;
  ccshim_adapter* adapter; /* prebuilt entry */
  ccshim_adapter* closure; /* libffi closure */
  XLA_FFI_Handler* b1;
  XLA_FFI_Handler* b1x;        /* NULL when not built */
  XLA_FFI_Handler* port;       /* P: NULL when not built, and for cpu_v3 */
  XLA_FFI_Handler* port_rt;    /* Pr: the same */
  XLA_FFI_Handler* b1r;        /* B1r, Pr's reference: the same */
  ccshim_frame_builder* fb_u8; /* P's GPU frame: the opaque as a u8 array */
  XLA_FFI_CallFrame frame_u8;
  /* B0's ready arguments */
  const void* in[MAX_BUFFERS];
  void* buffers[MAX_BUFFERS];
  ccshim_legacy_status_storage status;
  void* stream;
} config;

static const unsigned char opaque_bytes[8] = {1, 0, 0, 0, 2, 0, 0, 0};

static void die(const char* what) {
  fprintf(stderr, "ccshim bench: %s: %s\n", what, ccshim_last_error());
  exit(2);
}

static void config_init(config* c, int form, int arity) {
  memset(c, 0, sizeof *c);
  c->form = form;
  c->arity = arity;
  int nargs = arity - 1; /* and one result */
  ccshim_context_options o = CCSHIM_CONTEXT_OPTIONS_INIT;
  o.platform = form == 3 ? "cuda" : "host";
  if (ccshim_context_new(&o, &c->ctx) || ccshim_frame_builder_new(&c->fb)) die("setup");
  int64_t four = 4;
  for (int i = 0; i < nargs; i++)
    if (ccshim_frame_builder_add_arg(c->fb, XLA_FFI_DataType_F32, c->data[i], 1, &four))
      die("frame");
  if (ccshim_frame_builder_add_ret(c->fb, XLA_FFI_DataType_F32, c->data[nargs], 1, &four))
    die("frame");
  if (form >= 2 && ccshim_frame_builder_add_string(c->fb, "opaque", (const char*)opaque_bytes, 8))
    die("frame");
  if (ccshim_frame_builder_build(c->fb, ccshim_ffi_api(), c->ctx, XLA_FFI_ExecutionStage_EXECUTE,
                                 &c->frame))
    die("frame");
  static const ccshim_legacy_fn kernels[NUM_FORMS] = {
      (ccshim_legacy_fn)triv_cpu_v1, (ccshim_legacy_fn)triv_cpu_v2, (ccshim_legacy_fn)triv_cpu_v3,
      (ccshim_legacy_fn)triv_gpu};
  static XLA_FFI_Handler* const b1s[NUM_FORMS] = {b1_cpu_v1, b1_cpu_v2, b1_cpu_v3, b1_gpu};
  const int versions[NUM_FORMS] = {1, 2, 3, 2};
  ccshim_wrap_options wo = CCSHIM_WRAP_OPTIONS_INIT;
  wo.entry = CCSHIM_ENTRY_PREBUILT;
  ccshim_platform platform = form == 3 ? CCSHIM_PLATFORM_CUDA : CCSHIM_PLATFORM_HOST;
  if (ccshim_wrap(kernels[form], versions[form], platform, NULL, &wo, &c->adapter)) die("wrap");
  wo.entry = CCSHIM_ENTRY_CLOSURE;
  if (ccshim_wrap(kernels[form], versions[form], platform, NULL, &wo, &c->closure)) die("wrap");
  c->b1 = b1s[form];
  c->b1x = ccshim_bench_ffi(form, arity);
  if (CCSHIM_BENCH_HAVE_FFI && c->b1x == NULL) die("no ffi.h handler for this form and arity");
  c->port = ccshim_bench_port(form, arity, 1);
  c->port_rt = ccshim_bench_port(form, arity, 0);
  c->b1r = ccshim_bench_ffi_rt(form);
  c->frame_u8 = c->frame;
  if (form == 3) { /* the same frame, its opaque a u8 array (what the port binds) */
    if (ccshim_frame_builder_new(&c->fb_u8)) die("setup");
    for (int i = 0; i < nargs; i++)
      if (ccshim_frame_builder_add_arg(c->fb_u8, XLA_FFI_DataType_F32, c->data[i], 1, &four))
        die("frame");
    if (ccshim_frame_builder_add_ret(c->fb_u8, XLA_FFI_DataType_F32, c->data[nargs], 1, &four) ||
        ccshim_frame_builder_add_array(c->fb_u8, "opaque", XLA_FFI_DataType_U8, opaque_bytes, 8) ||
        ccshim_frame_builder_build(c->fb_u8, ccshim_ffi_api(), c->ctx,
                                   XLA_FFI_ExecutionStage_EXECUTE, &c->frame_u8))
      die("frame");
  }
  for (int i = 0; i < nargs; i++) c->in[i] = c->data[i];
  for (int i = 0; i <= nargs; i++) c->buffers[i] = c->data[i];
  ccshim_legacy_status_init(&c->status);
  c->stream = ccshim_context_stream(c->ctx);
}

static void config_free(config* c) {
  ccshim_adapter_free(c->adapter);
  ccshim_adapter_free(c->closure);
  ccshim_frame_builder_free(c->fb);
  ccshim_frame_builder_free(c->fb_u8);
  ccshim_context_free(c->ctx);
}

static void __attribute__((noinline)) run_b0(config* c, long n) {
  XlaCustomCallStatus* s = (XlaCustomCallStatus*)&c->status;
  void* out = c->data[c->arity - 1];
  for (long k = 0; k < n; k++) {
    switch (c->form) {
      case 0: ccshim_bench_k_v1(out, c->in); break;
      case 1: ccshim_bench_k_v2(out, c->in, s); break;
      case 2: ccshim_bench_k_v3(out, c->in, (const char*)opaque_bytes, 8, s); break;
      default: ccshim_bench_k_gpu(c->stream, c->buffers, (const char*)opaque_bytes, 8, s); break;
    }
  }
}

static void __attribute__((noinline))
run_handler(config* c, XLA_FFI_Handler* h, XLA_FFI_CallFrame* frame, long n) {
  b1_nargs = c->arity - 1;
  b1_nrets = 1;
  for (long k = 0; k < n; k++) {
    XLA_FFI_Error* e = h(frame);
    if (e != NULL) die(ccshim_error_message(e));
  }
}

static void run_variant(config* c, int v, long n) {
  switch (v) {
    case 0: run_b0(c, n); break;
    case 1: run_handler(c, c->b1, &c->frame, n); break;
    case 2: run_handler(c, ccshim_adapter_handler(c->adapter), &c->frame, n); break;
    case 3: run_handler(c, ccshim_adapter_handler(c->closure), &c->frame, n); break;
    case B1X: run_handler(c, c->b1x, &c->frame, n); break;
    case PORT: run_handler(c, c->port, &c->frame_u8, n); break;
    case PORT_RT: run_handler(c, c->port_rt, &c->frame_u8, n); break;
    default: run_handler(c, c->b1r, &c->frame, n); break;
  }
}

/* --- Measurements ------------------------------------------------------------ */

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

enum { MAX_RUNS = 64 };

/* The value at fraction q of the sorted v[0..n), interpolated. */
static double quantile(const double* v, int n, double q) {
  double pos = q * (n - 1);
  int lo = (int)pos;
  if (lo >= n - 1) return v[n - 1];
  return v[lo] + (pos - lo) * (v[lo + 1] - v[lo]);
}

static spread spread_of(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  spread s = {v[0], quantile(v, n, 0.25), quantile(v, n, 0.5), quantile(v, n, 0.75), v[n - 1]};
  return s;
}

/* Nanoseconds per call of each variant, the variants interleaved in every
 * run so that a slow moment of the machine falls on all of them. */
static void time_config(config* c, int runs, long calls, spread ns[VARIANTS]) {
  double samples[VARIANTS][MAX_RUNS] = {{0}};
  for (int v = 0; v < VARIANTS; v++)
    if (variant_built(v, c->form)) run_variant(c, v, calls / 10); /* warm up */
  for (int r = 0; r < runs; r++)
    for (int v = 0; v < VARIANTS; v++) {
      if (!variant_built(v, c->form)) continue;
      double t0 = now_ns();
      run_variant(c, v, calls);
      samples[v][r] = (now_ns() - t0) / (double)calls;
    }
  for (int v = 0; v < VARIANTS; v++) ns[v] = spread_of(samples[v], runs);
}

/* Under callgrind: each variant's loop collected alone and dumped under its
 * own name, parsed by the parent. */
static void instructions_child(long calls) {
  for (int f = 0; f < NUM_FORMS; f++)
    for (int a = 0; a < NUM_ARITIES; a++) {
      config* c = malloc(sizeof *c);
      config_init(c, f, arities[a]);
      for (int v = 0; v < VARIANTS; v++) {
        if (!variant_built(v, f)) continue;
        run_variant(c, v, 16); /* resolve lazy bindings outside the count */
        char label[64];
        snprintf(label, sizeof label, "%s/%d/%s", form_names[f], arities[a], variant_names[v]);
        CALLGRIND_TOGGLE_COLLECT;
        run_variant(c, v, calls);
        CALLGRIND_TOGGLE_COLLECT;
        CALLGRIND_DUMP_STATS_AT(label);
      }
      config_free(c);
      free(c);
    }
}

/* Reads every dump callgrind wrote: "desc: Trigger: Client Request: LABEL"
 * then "summary: N" (or "totals: N"). */
static int read_dumps(const char* dir, double instr[NUM_FORMS][NUM_ARITIES][VARIANTS], long calls) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "cat %s/cg.out* 2>/dev/null", dir);
  FILE* p = popen(cmd, "r");
  if (p == NULL) return 0;
  char line[512], label[128] = "";
  int found = 0;
  while (fgets(line, sizeof line, p)) {
    if (sscanf(line, "desc: Trigger: Client Request: %127s", label) == 1) continue;
    unsigned long long n;
    if (label[0] &&
        (sscanf(line, "summary: %llu", &n) == 1 || sscanf(line, "totals: %llu", &n) == 1)) {
      for (int f = 0; f < NUM_FORMS; f++)
        for (int a = 0; a < NUM_ARITIES; a++)
          for (int v = 0; v < VARIANTS; v++) {
            char want[64];
            snprintf(want, sizeof want, "%s/%d/%s", form_names[f], arities[a], variant_names[v]);
            if (strcmp(want, label) == 0) {
              instr[f][a][v] = (double)n / (double)calls;
              found++;
            }
          }
      label[0] = '\0';
    }
  }
  pclose(p);
  return found;
}

static int measure_instructions(const char* self, double instr[NUM_FORMS][NUM_ARITIES][VARIANTS],
                                long calls) {
  if (!HAVE_CALLGRIND || system("valgrind --version >/dev/null 2>&1") != 0) return 0;
  char dir[] = "/tmp/ccshim-bench-XXXXXX";
  if (mkdtemp(dir) == NULL) return 0;
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "valgrind --tool=callgrind --collect-atstart=no --dump-instr=no "
           "--callgrind-out-file=%s/cg.out.%%p %s bench --instructions-child %ld "
           ">/dev/null 2>&1",
           dir, self, calls);
  int rc = system(cmd);
  int found = rc == 0 ? read_dumps(dir, instr, calls) : 0;
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "ccshim bench: could not remove %s\n", dir);
  return found;
}

/* Two threads on one adapter, against one. */
typedef struct scaling_job {
  config* c;
  long calls;
} scaling_job;

static void* scaling_worker(void* p) {
  scaling_job* j = p;
  run_handler(j->c, ccshim_adapter_handler(j->c->adapter), &j->c->frame, j->calls);
  return NULL;
}

static double thread_scaling(long calls) {
  config* c[2];
  for (int i = 0; i < 2; i++) {
    c[i] = malloc(sizeof *c[i]);
    config_init(c[i], 1, 4);
  }
  /* Both threads call the first config's adapter on their own frames. */
  ccshim_adapter_free(c[1]->adapter);
  c[1]->adapter = c[0]->adapter;
  double best1 = 1e30, best2 = 1e30;
  for (int r = 0; r < 15; r++) { /* best of many: the machine may be shared */
    double t0 = now_ns();
    run_handler(c[0], ccshim_adapter_handler(c[0]->adapter), &c[0]->frame, calls);
    double t1 = now_ns() - t0;
    pthread_t th[2];
    scaling_job jobs[2] = {{c[0], calls}, {c[1], calls}};
    t0 = now_ns();
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, scaling_worker, &jobs[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    double t2 = now_ns() - t0;
    if (t1 < best1) best1 = t1;
    if (t2 < best2) best2 = t2;
  }
  c[1]->adapter = NULL;
  for (int i = 0; i < 2; i++) {
    config_free(c[i]);
    free(c[i]);
  }
  return 2.0 * best1 / best2; /* throughput of two threads over one */
}

static void wrap_cost(double* wrap_us, size_t* footprint, size_t* closure_bytes) {
  enum { N = 2000 };
  static ccshim_adapter* a[N];
  const char* sig = "(f32[128], f32[2048]) -> f32[2048]";
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    double t0 = now_ns();
    for (int i = 0; i < N; i++)
      if (ccshim_wrap((ccshim_legacy_fn)triv_cpu_v2, 2, CCSHIM_PLATFORM_HOST, sig, NULL, &a[i]))
        die("wrap");
    double t = (now_ns() - t0) / N / 1000.0;
    if (t < best) best = t;
    *footprint = ccshim_adapter_footprint(a[0]);
    for (int i = 0; i < N; i++) ccshim_adapter_free(a[i]);
  }
  *wrap_us = best;
  *closure_bytes = ccshim_closure_size();
}

int ccshim_bench_main(const char* self, int argc, char** argv) {
  const char* json_path = "bench.json";
  int quick = 0, instructions = 1;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--instructions-child") == 0 && i + 1 < argc) {
      instructions_child(atol(argv[i + 1]));
      return 0;
    }
    if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
      json_path = argv[++i];
    else if (strcmp(argv[i], "--quick") == 0)
      quick = 1;
    else if (strcmp(argv[i], "--no-instructions") == 0)
      instructions = 0;
    else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      printf(
          "usage: ccshim bench [--json FILE] [--quick] [--no-instructions]\n\n"
          "The adapter's cost per call: a direct call (B0), hand-written typed\n"
          "handlers (B1 in C against XLA's C API; B1x with XLA's C++ ffi.h, where\n"
          "the build had jaxlib's headers) and a ccshim adapter (B2, B2c with a\n"
          "libffi closure), for every legacy form at 1, 4, 16 and 64 buffers;\n"
          "instructions from callgrind (when valgrind is installed) and nanoseconds\n"
          "(the median of 31 interleaved runs, 5 with --quick, with quartiles and\n"
          "range).  Writes a table to stdout and JSON to FILE (default bench.json),\n"
          "both naming the build they measure: its type, compiler and flags (make\n"
          "bench measures Release builds).\n\n"
          "examples:\n"
          "  ccshim bench --json build-bench-gcc/bench.json\n"
          "  ccshim bench --quick --no-instructions\n");
      return 0;
    } else {
      fprintf(stderr,
              "ccshim bench: unknown argument '%s'; usage: ccshim bench [--json FILE] "
              "[--quick] [--no-instructions]\n",
              argv[i]);
      return 2;
    }
  }
  /* A file that cannot be made is said before the minutes of measuring. */
  FILE* j = fopen(json_path, "w");
  if (j == NULL) {
    fprintf(stderr, "ccshim bench: cannot write %s: %s\n", json_path, strerror(errno));
    return 2;
  }
  const long calls = quick ? 20000 : 200000;
  const int runs = quick ? 5 : 31;
  static results r;
  r.runs = runs;
  for (int f = 0; f < NUM_FORMS; f++)
    for (int a = 0; a < NUM_ARITIES; a++) {
      config* c = malloc(sizeof *c);
      config_init(c, f, arities[a]);
      time_config(c, runs, calls, r.ns[f][a]);
      config_free(c);
      free(c);
    }
  int measured = 0; /* the dumps expected: each variant built, per form and arity */
  for (int f = 0; f < NUM_FORMS; f++)
    for (int v = 0; v < VARIANTS; v++) measured += NUM_ARITIES * variant_built(v, f);
  r.have_instr = instructions && measure_instructions(self, r.instr, 1000) == measured;
  r.scaling = thread_scaling(quick ? 200000 : 2000000);
  wrap_cost(&r.wrap_us, &r.footprint, &r.closure_bytes);
  int met = ccshim_bench_print_table(&r);
  ccshim_bench_write_json(j, &r);
  /* A full disk shows only at the flush: the results are not written
   * until fclose says so. */
  int write_failed = ferror(j);
  if (fclose(j) != 0 || write_failed) {
    fprintf(stderr, "ccshim bench: cannot write %s: %s\n", json_path,
            errno ? strerror(errno) : "write error");
    return 2;
  }
  printf("wrote %s\n", json_path);
  return r.have_instr && !met ? 1 : 0;
}
