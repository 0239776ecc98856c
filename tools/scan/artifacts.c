/*
 * Exported programs in the tree: jax.export artifacts and StableHLO modules
 * (portable artifacts, MLIR bytecode, .mlir text) whose custom calls may use
 * the legacy convention.  Telling a legacy call from a typed one takes the
 * module's attributes (JAX writes its typed calls as api_version 1 with a
 * dictionary), so the files are not parsed here: they are recognised by
 * their bytes, and read by JAX's own machinery through ccshim.export, run
 * once for all of them in $CCSHIM_PYTHON.  A file it cannot read, or a
 * Python that cannot read any, is reported with the reason, never dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tools.h"
#include "scan.h"

static const char MAGIC[4] = {'M', 'L', '\xef', 'R'}; /* MLIR bytecode */
enum { PROBE_BYTES = 64 << 10 };

/* Whether a file's bytes (the first `n` of `size`) are an exported program:
 * MLIR bytecode; a .mlir file that has custom calls; or a flatbuffer (a
 * root offset inside the file) holding MLIR bytecode, as jax.export writes
 * them.  `head` holds the whole file for .mlir. */
int scan_is_artifact(const char* name, const char* head, size_t n, size_t size) {
  if (n >= sizeof MAGIC && !memcmp(head, MAGIC, sizeof MAGIC)) return 1;
  const char* dot = strrchr(name, '.');
  if (dot && !strcmp(dot, ".mlir")) return memmem(head, n, "custom_call", 11) != NULL;
  if (n < 8) return 0;
  uint32_t root = (uint32_t)(unsigned char)head[0] | (uint32_t)(unsigned char)head[1] << 8 |
                  (uint32_t)(unsigned char)head[2] << 16 | (uint32_t)(unsigned char)head[3] << 24;
  return root >= 4 && root < size && root % 4 == 0 && memmem(head, n, MAGIC, sizeof MAGIC);
}

void scan_maybe_artifact(scan* s, const char* path, const char* shown) {
  int fd = scan_open_any(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return; /* not a source file: not ours to report */
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE_BYTES) {
    close(fd);
    return;
  }
  const char* dot = strrchr(shown, '.');
  size_t want = dot && !strcmp(dot, ".mlir") ? (size_t)st.st_size : PROBE_BYTES;
  char* head = malloc(want + 1);
  ssize_t got = head ? read(fd, head, want) : -1;
  close(fd);
  if (got > 0 && scan_is_artifact(shown, head, (size_t)got, (size_t)st.st_size)) {
    s->arts = scan_grow(s->arts, &s->arts_cap, sizeof *s->arts, s->num_arts + 1);
    artifact* a = &s->arts[s->num_arts++];
    memset(a, 0, sizeof *a);
    a->path = scan_strdup(path);
    a->shown = scan_keep_path(s, shown);
  }
  free(head);
}

/* --- Reading them, all at once, with ccshim.export ------------------------------------------- */

/* Into a finding's fixed field: text that does not fit ends in "...",
 * said, never cut unseen. */
void scan_copy_marked(char* out, size_t cap, const char* text) {
  int n = snprintf(out, cap, "%s", text);
  if (n >= 0 && (size_t)n >= cap && cap >= 4) memcpy(out + cap - 4, "...", 4);
}

/* A field kept whole: an owned copy, replacing *to. */
static void keep(char** to, const char* text) {
  free(*to);
  *to = scan_strdup(text);
}

/* One line of `ccshim rewrite --list --tsv`: F (a file read), C (one of its
 * legacy calls) or E (a file that did not read). */
static void take_line(scan* s, char* line) {
  char* p = line;
  const char* tag = scan_field(&p);
  char* end;
  unsigned long i = strtoul(scan_field(&p), &end, 10);
  if (*end || i >= s->num_arts) return;
  artifact* a = &s->arts[i];
  if (!strcmp(tag, "E")) {
    keep(&a->error, scan_field(&p));
  } else if (!strcmp(tag, "F")) {
    a->read = 1;
    keep(&a->kind, scan_field(&p));
    keep(&a->platforms, scan_field(&p));
    a->typed = atoi(scan_field(&p));
    a->builtin = atoi(scan_field(&p));
    a->rewritten = atoi(scan_field(&p));
  } else if (!strcmp(tag, "C")) {
    a->calls = scan_grow(a->calls, &a->calls_cap, sizeof *a->calls, a->num_calls + 1);
    artifact_call* c = &a->calls[a->num_calls++];
    memset(c, 0, sizeof *c);
    keep(&c->target, scan_field(&p));
    c->version = atoi(scan_field(&p));
    c->opaque_bytes = atol(scan_field(&p));
    keep(&c->signature, scan_field(&p));
    keep(&c->location, scan_field(&p));
  }
}

static void all_failed(scan* s, const char* why) {
  for (size_t i = 0; i < s->num_arts; i++)
    if (!s->arts[i].read && s->arts[i].error == NULL) keep(&s->arts[i].error, why);
}

/* Each legacy call of a program read becomes a call site of its target,
 * joined with the target's definition and registrations in the sources. */
static void add_call_sites(scan* s) {
  for (size_t i = 0; i < s->num_arts; i++) {
    const artifact* a = &s->arts[i];
    char first[64];
    const char* platforms = a->platforms ? a->platforms : "";
    snprintf(first, sizeof first, "%.*s", (int)strcspn(platforms, ","), platforms);
    for (size_t k = 0; k < a->num_calls; k++) {
      s->f = scan_grow(s->f, &s->cap, sizeof *s->f, s->n + 1);
      finding* f = &s->f[s->n++];
      memset(f, 0, sizeof *f);
      f->kind = CALL_SITE;
      f->file = a->shown;
      f->lang = LANG_PY;
      scan_copy_marked(f->what, sizeof f->what, "an exported program");
      scan_copy_marked(f->name, sizeof f->name, a->calls[k].target);
      f->version = a->calls[k].version;
      f->platform = first[0] ? scan_plat_parse(first) : PLAT_UNKNOWN;
    }
  }
}

void scan_read_artifacts(scan* s) {
  if (s->num_arts == 0) return;
  FILE* paths = tmpfile();
  char why[TEXT_CAP];
  char* text = NULL;
  if (paths == NULL) {
    all_failed(s, "could not start Python to read it (no temporary file)");
  } else {
    for (size_t i = 0; i < s->num_arts; i++)
      fwrite(s->arts[i].path, 1, strlen(s->arts[i].path) + 1, paths);
    fflush(paths);
    char* args[] = {"--list", "--tsv"};
    text = scan_python_records("ccshim.export", args, 2, paths, why, sizeof why);
    for (char* p = text; p && *p;) take_line(s, scan_line(&p));
    all_failed(s, why);
    add_call_sites(s);
    free(text);
    fclose(paths);
  }
  for (size_t i = 0; i < s->num_arts; i++)
    if (s->arts[i].error != NULL) {
      fprintf(stderr, "ccshim scan: %s: an exported program, not read: %s\n", s->arts[i].shown,
              s->arts[i].error);
      s->errors++;
    }
}

/* The command that rewrites one: OUT beside IN, ".ccshim" before the
 * extension.  An owned string, whole however long the path. */
char* scan_rewrite_line(const char* shown) {
  const char* slash = strrchr(shown, '/');
  const char* dot = strrchr(shown, '.');
  size_t cap = 2 * strlen(shown) + 32;
  char* out = scan_grow(NULL, &(size_t){0}, 1, cap);
  if (dot && (slash == NULL || dot > slash + 1))
    snprintf(out, cap, "ccshim rewrite %s %.*s.ccshim%s", shown, (int)(dot - shown), shown, dot);
  else
    snprintf(out, cap, "ccshim rewrite %s %s.ccshim", shown, shown);
  return out;
}

void scan_free_artifacts(scan* s) {
  for (size_t i = 0; i < s->num_arts; i++) {
    artifact* a = &s->arts[i];
    for (size_t k = 0; k < a->num_calls; k++) {
      free(a->calls[k].target);
      free(a->calls[k].signature);
      free(a->calls[k].location);
    }
    free(a->path);
    free(a->kind);
    free(a->platforms);
    free(a->error);
    free(a->calls);
  }
  free(s->arts);
}
