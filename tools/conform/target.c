/* conform: one target, its runs side by side. */
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
        conform_prepare(&l->args[i], -1, t->seed * 1000003u + (uint64_t)run * 7919u + i, run % 2);
      for (int f = 0; f < t->num_fixed; f++)
        if (t->fixed[f].len)
          memcpy(l->args[t->fixed[f].index].data, t->fixed[f].bytes, t->fixed[f].len);
      for (size_t i = 0; i < nr; i++) conform_prepare(&l->rets[which][i], UNWRITTEN, 0, 0);
      conform_in_child(t, l, &sides[which], which ? RUN_TYPED : RUN_LEGACY, &r->output);
      for (size_t i = 0; i < na + nr; i++) {
        const buffer* b = i < na ? &l->args[i] : &l->rets[which][i - na];
        long at = conform_overrun(b);
        if (at >= 0) {
          conform_set_detail(r,
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
      conform_set_detail(r, "run %d: legacy %s; typed %s%s", run, outcome(lg), outcome(ty),
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
      int alike = t->reference_xla
                      ? lg->state == ty->state && strstr(lg->message, ty->message) != NULL
                      : lg->state == ty->state &&
                            (lg->code == ty->code || t->against_lib || t->against_python) &&
                            lg->message_len == ty->message_len &&
                            lg->message_hash == ty->message_hash &&
                            strcmp(lg->message, ty->message) == 0;
      if (alike) {
        r->equal++;
        if (r->failed++ == 0) r->failure = conform_format("%s", lg->message);
        continue;
      }
      conform_set_detail(r, "run %d: legacy %s; typed %s", run,
                         lg->state == FAILED ? lg->message : "succeeded",
                         ty->state == FAILED ? ty->message : "succeeded");
      return 1;
    }
    for (size_t i = 0; i < nr; i++) {
      long first = conform_compare(l->rets[0][i].data, l->rets[1][i].data, l->rets[0][i].bytes,
                                   l->rets[0][i].dtype, t->rtol);
      if (first >= 0) {
        r->first_byte = first;
        r->first_result = i;
        conform_set_detail(r, "run %d: result %zu differs first at byte %ld", run, i, first);
        return 1;
      }
    }
    r->equal++;
  }
  return 0;
}

int conform_check_target(target* t, report* r) {
  memset(r, 0, sizeof *r);
  r->first_byte = -1;
  r->symbol = conform_format("%s", t->symbol);
  r->lib = conform_format("%s", t->lib);
  snprintf(r->form, sizeof r->form, "%s", conform_form_name(t->api, t->platform));
  r->signature = conform_format("%s", t->signature);
  r->runs = t->runs;
  r->status = 3;
  r->by_reference = t->reference_xla;
  if (t->api < 1 || t->api > 3) {
    conform_set_detail(r, "--api %d: expected 1, 2 or 3", t->api);
    return 3;
  }
  if (t->platform != CCSHIM_PLATFORM_HOST) {
    conform_set_detail(r, "--platform %s: conform runs CPU kernels (GPU kernels: tests/gpu/run.sh)",
                       ccshim_platform_name(t->platform));
    return 3;
  }
  if (t->against_lib || t->against_python)
    snprintf(r->form + strlen(r->form), sizeof r->form - strlen(r->form), " vs typed");
  if (t->tuple_operands == CCSHIM_TUPLES_NESTED)
    snprintf(r->form + strlen(r->form), sizeof r->form - strlen(r->form), ", nested");
  /* The libraries are loaded only in children: first once, to say now that
   * one is missing or that its initialiser misbehaves. */
  side* loaded =
      mmap(NULL, sizeof(side), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (loaded == MAP_FAILED) {
    conform_set_detail(r, "cannot map shared memory: %s", strerror(errno));
    return 3;
  }
  conform_in_child(t, NULL, loaded, RUN_PROBE, &r->output);
  int load_state = loaded->state;
  if (load_state != RAN) conform_set_detail(r, "%s", loaded->message);
  munmap(loaded, sizeof(side));
  if (load_state != RAN) return 3;
  layout l;
  memset(&l, 0, sizeof l);
  l.fd = -1;
  if (ccshim_signature_parse(t->signature, &l.sig) != CCSHIM_OK) {
    conform_set_detail(r, "%s", ccshim_last_error());
    return 3;
  }
  if (!l.sig->is_static) {
    conform_set_detail(r,
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
    conform_set_detail(r, "cannot map shared memory: %s", strerror(errno));
    ccshim_signature_free(l.sig);
    return 3;
  }
  char layout_error[256] = "";
  int ok = conform_layout_init(&l, layout_error, sizeof layout_error) == 0;
  if (!ok) conform_set_detail(r, "%s", layout_error);
  for (int f = 0; ok && f < t->num_fixed; f++) {
    size_t i = t->fixed[f].index;
    if (i < l.sig->num_arg_leaves && t->fixed[f].len == l.args[i].bytes) continue;
    char want[64] = "no such argument";
    if (i < l.sig->num_arg_leaves)
      snprintf(want, sizeof want, "argument %zu has %zu bytes", i, l.args[i].bytes);
    conform_set_detail(r, "--arg-hex %zu: %zu bytes given, but %s", i, t->fixed[f].len, want);
    ok = 0;
  }
  if (ok) r->status = compare_runs(t, &l, sides, r);
  munmap(sides, 2 * sizeof(side));
  conform_layout_free(&l);
  return r->status;
}
