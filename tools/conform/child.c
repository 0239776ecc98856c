/* conform: one side of a run in a child process of its own. */
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

/* The kernel (unless it comes from Python: in_python.c), and with --against
 * the native handler, loaded in the child; 0, or -1 with BROKEN set. */
static int load(const target* t, ccshim_legacy_fn* fn, XLA_FFI_Handler** handler, side* out) {
  memset(fn, 0, sizeof *fn);
  *handler = NULL;
  if (t->python == NULL) {
    void* sym = load_symbol("", t->lib, t->symbol, out);
    if (sym == NULL) return -1;
    memcpy(fn, &sym, sizeof *fn);
  }
  if (t->against_lib) {
    void* sym = load_symbol("--against: ", t->against_lib, t->against_symbol, out);
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
    conform_set_message(out, o.message);
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
    conform_set_message(out, ccshim_error_message(err));
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
    return conform_format("%s printed %lld bytes; the first %zd: %s", who, (long long)st.st_size, n,
                          buf);
  return conform_format("%s printed %lld bytes: %s", who, (long long)st.st_size, buf);
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
void conform_in_child(const target* t, layout* l, side* out, int what, char** output) {
  memset(out, 0, sizeof *out);
  int control_fd = -1;
  control* c = NULL;
  if (conform_in_python(t, what)) {
    c = conform_control_new(t, l, what, &control_fd);
    if (c == NULL) {
      out->state = BROKEN;
      snprintf(out->message, sizeof out->message, "cannot make the control record: %s",
               strerror(errno));
      return;
    }
  }
  int fd = capture_file();
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    out->state = BROKEN;
    snprintf(out->message, sizeof out->message, "fork: %s", strerror(errno));
    if (fd >= 0) close(fd);
    if (c != NULL) conform_control_free(c, control_fd);
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
    if (c != NULL)
      conform_exec_python(t, control_fd, l ? l->fd : -1, c); /* returns only if it could not */
    else if (what == RUN_TYPED)
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
  if (c != NULL) {
    *out = c->result;
    conform_note_reference(c->reference); /* written only by a side XLA ran */
    conform_control_free(c, control_fd);
  }
  const char* where = out->loaded ? ""
                      : t->init   ? " while loading the kernel (in --init, or its library's "
                                    "initialiser)"
                                  : " while loading the library (in its initialiser)";
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
