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
 * manifest).  A target that names --python or --reference xla runs the
 * sides that need Python in Python (in_python.c).  Exit status: 0 when
 * every target is equal, 1 when one is not, 2 when the command itself is
 * wrong.
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

#include "conform.h"

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
  char* dir =
      slash ? conform_format("%.*s", (int)(slash - manifest), manifest) : conform_format(".");
  if (dir[0] == '\0') {
    free(dir);
    dir = conform_format("/");
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
      for (int i = 0; i < n; i++) conform_report_reset(&reports[i]);
      free(reports);
      free(line);
      free(dir);
      return 2;
    }
    int max_words = (int)(len / 2 + 1);
    char** words = conform_need(malloc((size_t)max_words * sizeof *words));
    int nw = conform_split_words(line, words, max_words);
    if (nw == 0) {
      free(words);
      continue;
    }
    reports = conform_need(realloc(reports, (size_t)(n + 1) * sizeof *reports));
    report* r = &reports[n++];
    target t;
    memset(&t, 0, sizeof t);
    if (nw < 0 || conform_parse_target(nw, words, dir, &t, NULL, err, sizeof err) != 0) {
      conform_target_reset(&t);
      memset(r, 0, sizeof *r);
      r->first_byte = -1;
      r->symbol = conform_format("line %d", lineno);
      r->lib = conform_format("%s", manifest);
      r->signature = conform_format("%s", "");
      conform_set_detail(r, "%s", nw == -2 ? "unclosed quote" : err);
      r->status = 3;
      worst = 3;
      free(words);
      continue;
    }
    free(words);
    if (parse_only) {
      memset(r, 0, sizeof *r);
      conform_target_reset(&t);
      continue;
    }
    int status = conform_check_target(&t, r);
    conform_target_reset(&t);
    if (status > worst) worst = status;
  }
  free(line);
  free(dir);
  if (n == 0) {
    fprintf(stderr, "ccshim conform: manifest %s names no target\n", manifest);
    return 2;
  }
  if (parse_only) {
    for (int i = 0; i < n; i++) conform_report_reset(&reports[i]);
    free(reports);
    return worst == 0 ? 0 : 1;
  }
  conform_print_reports(reports, n, json);
  for (int i = 0; i < n; i++) conform_report_reset(&reports[i]);
  free(reports);
  return worst == 0 ? 0 : 1;
}

int ccshim_conform_main(int argc, char** argv) {
  char err[1200];
  int json = 0;
  const char* manifest = NULL;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      conform_print_usage(stdout);
      return 0;
    }
  }
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
    if (conform_parse_target(argc, argv, NULL, &t, &json, err, sizeof err) != 0) {
      conform_target_reset(&t);
      fprintf(stderr, "ccshim conform: %s\n", err);
      return 2;
    }
    report r;
    int st = conform_check_target(&t, &r);
    conform_target_reset(&t);
    if (st == 3 && !json) {
      fprintf(stderr, "ccshim conform: %s\n", r.detail ? r.detail : "error");
      if (r.output) fprintf(stderr, "ccshim conform: (%s)\n", r.output);
      conform_report_reset(&r);
      return 2;
    }
    conform_print_reports(&r, 1, json);
    conform_report_reset(&r);
    return st == 0 ? 0 : st == 3 ? 2 : 1;
  }

  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--manifest")) {
      i++;
    } else if (conform_find_option(argv[i]) != NULL && strcmp(argv[i], "--json")) {
      fprintf(stderr, "ccshim conform: %s goes on a manifest's lines, not beside --manifest\n",
              argv[i]);
      return 2;
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
