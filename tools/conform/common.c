/* conform: strings, the report, the names of forms and the reference. */
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

/* XLA's name as the Python side that ran it gave it (with jaxlib's version). */
static char xla_name[REFERENCE_NAME_CAP] = "XLA's legacy custom-call path (jaxlib)";

const char* conform_reference_name(int by_reference) {
  return by_reference ? xla_name : "ccshim's legacy invoker (XLA's legacy calling convention)";
}

void conform_note_reference(const char* name) { /* an empty name leaves it */
  if (name[0] != '\0') snprintf(xla_name, sizeof xla_name, "%s", name);
}

/* No memory is the one thing a command-line tool cannot report into a
 * report: it says so and exits 2. */
void* conform_need(void* p) {
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
  return conform_need(s);
}

char* conform_format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char* s = vformat(fmt, ap);
  va_end(ap);
  return s;
}

void conform_set_detail(report* r, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char* s = vformat(fmt, ap);
  va_end(ap);
  free(r->detail);
  r->detail = s;
}

void conform_report_reset(report* r) {
  free(r->symbol);
  free(r->lib);
  free(r->signature);
  free(r->detail);
  free(r->output);
  free(r->failure);
  memset(r, 0, sizeof *r);
}

static uint64_t fnv1a(const char* s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
  return h;
}

/* Records a failure's message: the whole of it compared, a prefix shown. */
void conform_set_message(side* out, const char* m) {
  size_t n = strlen(m);
  out->message_len = n;
  out->message_hash = fnv1a(m, n);
  snprintf(out->message, sizeof out->message, "%s", m);
  if (n >= sizeof out->message)
    snprintf(out->message + sizeof out->message - 32, 32, "... (%zu bytes)", n);
}

const char* conform_form_name(int api, ccshim_platform p) {
  const char* name = ccshim_legacy_form_name(api, p);
  return name ? name : "unknown form";
}
