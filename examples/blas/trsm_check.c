/*
 * The legacy BLAS kernels (trsm_kernels.cc) run through ccshim: each of the
 * 16 flag combinations (side, triangle, transpose, unit diagonal), for
 * float and double, solved three ways --
 *
 *   wrapped  a ccshim adapter, invoked in the embedded typed runtime;
 *   legacy   the legacy invoker, calling the kernel as XLA's legacy runtime did;
 *   direct   substitution in double precision, written out here;
 *
 * and compared: wrapped and legacy byte for byte, wrapped and direct within
 * the precision of the type.  The unused triangle (and the diagonal, when
 * unit) holds garbage that a correct solve never reads.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccshim/ccshim.h"

enum { MAX_K = 8, MAX_B = 2 };

typedef struct problem {
  int32_t left, lower, trans, unit, m, n, batch;
} problem;

/* op(A)[r][c] of a column-major k x k matrix. */
static double op_a(const double* a, int k, int trans, int r, int c) {
  return trans ? a[r * k + c] : a[c * k + r];
}

/* Solves one batch directly: x = alpha * op(A)^-1 b (left) or b op(A)^-1. */
static void direct(const problem* p, const double* a, const double* b, double alpha, double* x) {
  int k = p->left ? p->m : p->n;
  int lower = p->lower ^ (p->trans != 0); /* op(A)'s triangle */
  int count = p->left ? p->n : p->m;      /* right-hand sides */
  for (int j = 0; j < count; j++) {
    /* Left: column j of B, M = op(A).  Right: row j of B, M = op(A)^T. */
    double rhs[MAX_K], y[MAX_K];
    for (int r = 0; r < k; r++) rhs[r] = alpha * (p->left ? b[j * p->m + r] : b[r * p->m + j]);
    int m_lower = p->left ? lower : !lower;
    for (int step = 0; step < k; step++) {
      int r = m_lower ? step : k - 1 - step;
      double s = rhs[r];
      for (int c = 0; c < k; c++) {
        int before = m_lower ? c < r : c > r;
        if (!before) continue;
        double mrc = p->left ? op_a(a, k, p->trans, r, c) : op_a(a, k, p->trans, c, r);
        s -= mrc * y[c];
      }
      y[r] = p->unit ? s : s / op_a(a, k, p->trans, r, r);
    }
    for (int r = 0; r < k; r++) {
      if (p->left)
        x[j * p->m + r] = y[r];
      else
        x[r * p->m + j] = y[r];
    }
  }
}

static void store(void* dst, size_t i, double v, int f64) {
  if (f64)
    ((double*)dst)[i] = v;
  else
    ((float*)dst)[i] = (float)v;
}

static double load(const void* src, size_t i, int f64) {
  return f64 ? ((const double*)src)[i] : ((const float*)src)[i];
}

/* Runs the kernel `name` both ways on the same operands: wrapped (a
 * typed call frame in the embedded runtime, as XLA would build it) and
 * legacy (as XLA's legacy runtime called it).  A failure's message goes to
 * msg_*, "" for success; -1 when ccshim itself refuses. */
static int run_both(const char* name, const char* sig, void** args, void* x_wrapped, void* x_legacy,
                    char* msg_wrapped, char* msg_legacy) {
  ccshim_signature* s;
  ccshim_adapter* adapter;
  msg_wrapped[0] = msg_legacy[0] = '\0';
  if (ccshim_signature_parse(sig, &s) ||
      ccshim_wrap_registered(name, "Host", 2, sig, NULL, &adapter)) {
    fprintf(stderr, "%s: %s\n", name, ccshim_last_error());
    return -1;
  }
  ccshim_context* ctx;
  ccshim_frame_builder* fb;
  XLA_FFI_Error* err = NULL;
  int ok =
      ccshim_context_new(NULL, &ctx) == CCSHIM_OK && ccshim_frame_builder_new(&fb) == CCSHIM_OK;
  for (size_t i = 0; ok && i < s->num_arg_leaves; i++)
    ok = ccshim_frame_builder_add_arg(fb, (XLA_FFI_DataType)s->arg_leaves[i]->dtype, args[i],
                                      s->arg_leaves[i]->rank, s->arg_leaves[i]->dims) == 0;
  ok = ok && ccshim_frame_builder_add_ret(fb, (XLA_FFI_DataType)s->ret_leaves[0]->dtype, x_wrapped,
                                          s->ret_leaves[0]->rank, s->ret_leaves[0]->dims) == 0;
  ccshim_status st = ok ? ccshim_invoke_handler(ccshim_adapter_handler(adapter), ctx,
                                                XLA_FFI_ExecutionStage_EXECUTE, fb, &err)
                        : CCSHIM_EINVAL;
  if (st == CCSHIM_EHANDLER)
    snprintf(msg_wrapped, 256, "%s", ccshim_error_message(err));
  else if (st != CCSHIM_OK)
    fprintf(stderr, "%s wrapped: %s\n", name, ccshim_last_error());
  ccshim_error_free(err);
  ccshim_frame_builder_free(fb);
  ccshim_context_free(ctx);

  ccshim_legacy_call call;
  memset(&call, 0, sizeof call);
  call.fn = ccshim_legacy_lookup(name, "Host");
  call.api_version = 2;
  call.platform = CCSHIM_PLATFORM_HOST;
  call.signature = s;
  call.args = args;
  call.num_args = s->num_arg_leaves;
  void* rets[1] = {x_legacy};
  call.rets = rets;
  call.num_rets = 1;
  ccshim_legacy_outcome out;
  int legacy_ok = ccshim_legacy_invoke(&call, &out) == CCSHIM_OK;
  if (!legacy_ok)
    fprintf(stderr, "%s legacy: %s\n", name, ccshim_last_error());
  else if (out.failed)
    snprintf(msg_legacy, 256, "%s", out.message);
  if (legacy_ok) ccshim_legacy_outcome_reset(&out);
  ccshim_signature_free(s);
  ccshim_adapter_free(adapter);
  return (st == CCSHIM_OK || st == CCSHIM_EHANDLER) && legacy_ok ? 0 : -1;
}

/* Runs one problem; returns the largest relative error against the direct
 * solve, or -1 when the two runtimes disagree or a run fails. */
static double check(const char* name, const problem* p, int f64, unsigned seed) {
  int k = p->left ? p->m : p->n;
  size_t es = f64 ? 8 : 4, na = (size_t)k * k, nx = (size_t)p->m * p->n;
  unsigned char a[MAX_B * MAX_K * MAX_K * 8], b[MAX_B * MAX_K * MAX_K * 8], alpha[8];
  unsigned char x_wrapped[MAX_B * MAX_K * MAX_K * 8], x_legacy[MAX_B * MAX_K * MAX_K * 8];
  double ad[MAX_B * MAX_K * MAX_K], bd[MAX_B * MAX_K * MAX_K], xd[MAX_B * MAX_K * MAX_K];
  srand(seed);
  for (int i = 0; i < p->batch; i++)
    for (int c = 0; c < k; c++)
      for (int r = 0; r < k; r++) {
        int used = p->lower ? r >= c : r <= c;
        double v = r == c ? 2.0 + rand() % 5 : (rand() % 200 - 100) / 150.0;
        if (!used || (r == c && p->unit)) v = 777.0; /* never read */
        ad[i * na + c * k + r] = v;
      }
  for (size_t i = 0; i < nx * p->batch; i++) bd[i] = (rand() % 2000 - 1000) / 100.0;
  double alpha_d = 1.5;
  for (size_t i = 0; i < na * p->batch; i++) store(a, i, ad[i], f64);
  for (size_t i = 0; i < nx * p->batch; i++) store(b, i, bd[i], f64);
  /* The operands hold what the kernel will compute with: round for f32. */
  for (size_t i = 0; i < na * p->batch; i++) ad[i] = load(a, i, f64);
  for (size_t i = 0; i < nx * p->batch; i++) bd[i] = load(b, i, f64);
  store(alpha, 0, alpha_d, f64);
  for (int i = 0; i < p->batch; i++) direct(p, ad + i * na, bd + i * nx, alpha_d, xd + i * nx);

  const char* t = f64 ? "f64" : "f32";
  char sig[256];
  snprintf(sig, sizeof sig,
           "(s32[], s32[], s32[], s32[], s32[], s32[], s32[], %s[], %s[%d,%d,%d], "
           "%s[%d,%d,%d]) -> %s[%d,%d,%d]",
           t, t, p->batch, k, k, t, p->batch, p->n, p->m, t, p->batch, p->n, p->m);
  const int32_t* flags = &p->left;
  void* args[10] = {(void*)&flags[0],
                    (void*)&flags[1],
                    (void*)&flags[2],
                    (void*)&flags[3],
                    (void*)&flags[4],
                    (void*)&flags[5],
                    (void*)&flags[6],
                    alpha,
                    a,
                    b};
  memset(x_wrapped, 0xa5, sizeof x_wrapped);
  memset(x_legacy, 0x5a, sizeof x_legacy);
  char msg_wrapped[256], msg_legacy[256];
  if (run_both(name, sig, args, x_wrapped, x_legacy, msg_wrapped, msg_legacy) != 0) return -1;
  if (msg_wrapped[0] || msg_legacy[0]) {
    fprintf(stderr, "%s failed: wrapped '%s', legacy '%s'\n", name, msg_wrapped, msg_legacy);
    return -1;
  }
  if (memcmp(x_wrapped, x_legacy, nx * p->batch * es) != 0) {
    fprintf(stderr, "%s: wrapped and legacy results differ\n", name);
    return -1;
  }
  double worst = 0;
  for (size_t i = 0; i < nx * p->batch; i++) {
    double e = fabs(load(x_wrapped, i, f64) - xd[i]) / (fabs(xd[i]) + 1e-3);
    if (!(e <= worst)) worst = e; /* NaN makes it NaN */
  }
  return worst;
}

int main(void) {
  int failures = 0;
  for (int f64 = 0; f64 <= 1; f64++) {
    const char* name = f64 ? "blas_dtrsm" : "blas_strsm";
    double tolerance = f64 ? 1e-10 : 1e-4, worst = 0;
    int cases = 0;
    for (int flags = 0; flags < 16; flags++)
      for (int shape = 0; shape < 2; shape++) {
        problem p = {flags & 1,     (flags >> 1) & 1, (flags >> 2) & 1, (flags >> 3) & 1,
                     shape ? 5 : 3, shape ? 3 : 4,    shape ? 2 : 1};
        double e = check(name, &p, f64, (unsigned)(flags * 7 + shape + 1));
        cases++;
        if (e < 0 || !(e <= tolerance)) {
          fprintf(stderr, "%s: left %d lower %d trans %d unit %d m %d n %d batch %d: error %g\n",
                  name, p.left, p.lower, p.trans, p.unit, p.m, p.n, p.batch, e);
          failures++;
        } else if (e > worst) {
          worst = e;
        }
      }
    printf(
        "%s: %d solves (16 flag combinations x 2 shapes): wrapped == legacy byte for byte, "
        "largest relative error against the direct solve %.2g (tolerance %g)\n",
        name, cases, worst, tolerance);
  }
  /* Bad operands fail the same on both runtimes, with the kernel's message. */
  int32_t v[7] = {1, 1, 0, 0, 0, 3, 1};
  float alpha = 1, a[1] = {0}, b[1] = {0}, x_wrapped[1], x_legacy[1];
  void* args[10] = {&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &alpha, a, b};
  char msg_wrapped[256], msg_legacy[256];
  const char* sig =
      "(s32[], s32[], s32[], s32[], s32[], s32[], s32[], f32[], f32[1,0,0], "
      "f32[1,3,0]) -> f32[1,3,0]";
  if (run_both("blas_strsm", sig, args, x_wrapped, x_legacy, msg_wrapped, msg_legacy) != 0 ||
      strcmp(msg_wrapped, msg_legacy) != 0 || strstr(msg_wrapped, "m 0") == NULL) {
    fprintf(stderr, "m = 0: wrapped '%s', legacy '%s'\n", msg_wrapped, msg_legacy);
    failures++;
  } else {
    printf("blas_strsm with m = 0: both runtimes fail with \"%s\"\n", msg_wrapped);
  }
  if (failures) printf("%d checks FAILED\n", failures);
  return failures ? 1 : 0;
}
