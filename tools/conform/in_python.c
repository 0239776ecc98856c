/* conform: a side that runs in Python.
 *
 * A kernel from a Python extension (--python) exists only in a process that
 * imported its module, and XLA's legacy path (--reference xla) only in one
 * with jaxlib.  So that side's child process, forked as every side's is,
 * execs `$CCSHIM_PYTHON -c BOOT conform ccshim.conform --control FD
 * --buffers FD ...`: the control record (below; docs/contracts.md, section
 * 3) says which side, its form, signature and opaque, where each buffer is
 * in the buffers' memfd and where its guard page is; the Python side maps
 * both, runs the side, and writes how it ended into the record.  The parent
 * keeps the deadline, the process group, the guards' canaries and the
 * comparison, as for a side run in C, and Python never calls back into
 * conform. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conform.h"

/* The layout docs/contracts.md gives (its test checks the fields). */
_Static_assert(offsetof(control, reference) == 72, "control: reference at 72");
_Static_assert(offsetof(control, result) == 232, "control: result at 232");
_Static_assert(offsetof(side, message) == 32 && sizeof(side) == 544, "side: 544 bytes");
_Static_assert(sizeof(control_buffer) == 24, "control_buffer: 24 bytes");

int conform_in_python(const target* t, int what) {
  if (what == RUN_TYPED)
    return t->against_python != NULL || (t->python != NULL && t->against_lib == NULL);
  return t->python != NULL || t->reference_xla;
}

static size_t round8(size_t n) { return (n + 7) / 8 * 8; }

/* The record's size for this side. */
static size_t control_bytes(const target* t, size_t num_buffers) {
  return sizeof(control) + round8(strlen(t->signature) + 1) + round8(t->opaque_len) +
         num_buffers * sizeof(control_buffer);
}

/* Where buffer b lies in the buffers' memfd. */
static control_buffer place(const layout* l, const buffer* b) {
  control_buffer cb = {UINT64_MAX, b->bytes, UINT64_MAX};
  if (b->data != NULL) {
    cb.offset = (uint64_t)(b->data - l->map);
    cb.guard = cb.offset + b->bytes + b->slack;
  }
  return cb;
}

control* conform_control_new(const target* t, const layout* l, int what, int* fd) {
  size_t na = l ? l->sig->num_arg_leaves : 0, nr = l ? l->sig->num_ret_leaves : 0;
  size_t bytes = control_bytes(t, na + nr);
  *fd = memfd_create("ccshim-conform-control", MFD_CLOEXEC);
  if (*fd < 0) return NULL;
  control* c = MAP_FAILED;
  if (ftruncate(*fd, (off_t)bytes) == 0)
    c = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
  if (c == MAP_FAILED) {
    int e = errno;
    close(*fd);
    errno = e;
    return NULL;
  }
  memcpy(c->magic, "ccshimC1", 8);
  c->what = (uint32_t)what;
  c->api = (uint32_t)t->api;
  c->tuple_operands = (uint32_t)t->tuple_operands;
  c->platform = (uint32_t)t->platform;
  c->num_args = na;
  c->num_rets = nr;
  unsigned char* base = (unsigned char*)c;
  size_t at = sizeof(control);
  c->signature_at = at;
  memcpy(base + at, t->signature, strlen(t->signature) + 1);
  at += round8(strlen(t->signature) + 1);
  c->opaque_at = at;
  c->opaque_len = t->opaque_len;
  if (t->opaque_len) memcpy(base + at, t->opaque, t->opaque_len);
  at += round8(t->opaque_len);
  c->buffers_at = at;
  control_buffer* table = (control_buffer*)(base + at);
  const buffer* rets = l == NULL ? NULL : l->rets[what == RUN_TYPED ? 1 : 0];
  for (size_t i = 0; i < na; i++) table[i] = place(l, &l->args[i]);
  for (size_t i = 0; i < nr; i++) table[na + i] = place(l, &rets[i]);
  return c;
}

void conform_control_free(control* c, int fd) {
  struct stat st;
  munmap(c, fstat(fd, &st) == 0 ? (size_t)st.st_size : sizeof *c);
  close(fd);
}

/* A file descriptor that survives exec (the memfds are close-on-exec). */
static int inherited(int fd, char* text, size_t cap) {
  int kept = fd < 0 ? -1 : fcntl(fd, F_DUPFD, 3);
  snprintf(text, cap, "%d", kept);
  return kept;
}

/* Puts dir before PYTHONPATH: this child's own environment, before its exec. */
static void path_first(const char* dir) {
  const char* old = getenv("PYTHONPATH");
  char* path = conform_format("%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
  setenv("PYTHONPATH", path, 1);
  free(path);
}

void conform_exec_python(const target* t, int control_fd, int buffers_fd, control* c) {
  char cfd[16], bfd[16];
  char* argv[16 + 2 * MAX_ATTRS];
  int n = 0;
  inherited(control_fd, cfd, sizeof cfd);
  inherited(buffers_fd, bfd, sizeof bfd);
  argv[n++] = "--control";
  argv[n++] = cfd;
  argv[n++] = "--buffers";
  argv[n++] = bfd;
  if (c->what == RUN_TYPED && t->against_python) {
    /* the port's handler, from its build (--against-path first on the path) */
    argv[n++] = "--against";
    argv[n++] = t->against_python;
    if (t->against_name) {
      argv[n++] = "--name";
      argv[n++] = t->against_name;
    }
    if (t->against_path) path_first(t->against_path);
  } else {
    if (t->python_path) path_first(t->python_path);
    if (t->restore_jax) argv[n++] = "--restore-jax";
    argv[n++] = t->python ? "--python" : "--lib";
    argv[n++] = t->python ? t->python : t->lib;
    if (t->python == NULL || t->python_named) {
      argv[n++] = t->python ? "--name" : "--symbol";
      argv[n++] = t->symbol;
    }
    if (t->init) {
      argv[n++] = "--init";
      argv[n++] = t->init;
    }
  }
  for (int k = 0; k < t->num_arg_from; k++) {
    argv[n++] = "--arg-from";
    argv[n++] = t->arg_from[k];
  }
  argv[n++] = "--reference";
  argv[n++] = t->reference_xla ? "xla" : "invoker";
  argv[n] = NULL;
  int e = ccshim_python_exec("conform", "ccshim.conform", n, argv);
  c->result.state = BROKEN;
  c->result.done = 1;
  snprintf(c->result.message, sizeof c->result.message,
           "cannot run %s (%s): --python and --reference xla run in a Python with the ccshim "
           "package (set CCSHIM_PYTHON to one)",
           ccshim_python_path(), strerror(e));
}
