/*
 * Running a Python reader of the ccshim package for the scan, and reading
 * its records back: exported programs through ccshim.export (artifacts.c)
 * and the tree's .py files through ccshim.scan (pyfiles.c).  Each takes a
 * file of paths and writes one tab-separated record a line
 * (docs/contracts.md, sections 2 and 4).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tools.h"
#include "scan.h"

/* The text at *p up to `sep` (or its end), cut there in place; *p moves
 * past it, to NULL at the end.  "" once *p is NULL. */
static char* split(char** p, char sep) {
  char* f = *p;
  if (f == NULL) return "";
  char* end = strchr(f, sep);
  if (end) {
    *end = '\0';
    *p = end + 1;
  } else {
    *p = NULL;
  }
  return f;
}

char* scan_field(char** p) { return split(p, '\t'); }

char* scan_line(char** p) { return split(p, '\n'); }

/* The first line of a file, or "". */
static void first_line(FILE* f, char* out, size_t cap) {
  out[0] = '\0';
  rewind(f);
  if (fgets(out, (int)cap, f)) out[strcspn(out, "\n")] = '\0';
}

/* Said where Python could not be started, with what was opened for it
 * closed (an out descriptor never opened is -1). */
static char* not_started(char* said, size_t cap, const char* why, FILE* errs, const int out[2]) {
  snprintf(said, cap, "could not start Python (%s)", why);
  if (errs != NULL) fclose(errs);
  for (int i = 0; i < 2; i++)
    if (out[i] >= 0) close(out[i]);
  return NULL;
}

char* scan_python_records(const char* module, char** args, int argc, FILE* paths, char* said,
                          size_t cap) {
  said[0] = '\0';
  FILE* errs = tmpfile();
  int out[2] = {-1, -1};
  if (errs == NULL || pipe(out) != 0)
    return not_started(said, cap, "no temporary file or pipe", errs, out);
  /* The paths file by its descriptor, the last two arguments. */
  char paths_arg[64];
  snprintf(paths_arg, sizeof paths_arg, "/dev/fd/%d", fileno(paths));
  char** argv = calloc((size_t)argc + 3, sizeof *argv);
  if (argv == NULL) return not_started(said, cap, "out of memory", errs, out);
  for (int i = 0; i < argc; i++) argv[i] = args[i];
  argv[argc] = "--paths-file";
  argv[argc + 1] = paths_arg;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    free(argv);
    return not_started(said, cap, "fork failed", errs, out);
  }
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(fileno(errs), 2);
    close(out[0]);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    ccshim_python_main("scan", module, argc + 2, argv);
    _exit(2);
  }
  free(argv);
  close(out[1]);
  char* text = NULL;
  size_t len = 0, tcap = 0;
  for (;;) {
    text = scan_grow(text, &tcap, 1, len + 4097);
    ssize_t n = read(out[0], text + len, 4096);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
  }
  text[len] = '\0';
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  char line[TEXT_CAP - 64];
  first_line(errs, line, sizeof line);
  fclose(errs);
  const char* own = "ccshim scan: "; /* the message of tools/python.c */
  const char* text_said = strncmp(line, own, strlen(own)) ? line : line + strlen(own);
  if (line[0])
    snprintf(said, cap, "Python could not read it: %s", text_said);
  else if (WIFEXITED(status))
    snprintf(said, cap, "Python could not read it (%s exited with status %d, saying nothing)",
             ccshim_python_path(), WEXITSTATUS(status));
  else
    snprintf(said, cap, "Python could not read it (%s ended by signal %d)", ccshim_python_path(),
             WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return text;
}
