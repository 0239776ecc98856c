/*
 * Walking a tree without recursion and reading each source file: regular
 * files only, opened O_NONBLOCK, paths of any length through openat().
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scan.h"

/* --- Walking the tree ------------------------------------------------------------------ */

int scan_source_lang(const char* name, lang* l, int* cython) {
  static const char* const c_ext[] = {".c",   ".h",  ".cc",  ".cpp", ".cxx", ".hpp", ".hh",
                                      ".hxx", ".cu", ".cuh", ".hip", ".inc", NULL};
  static const char* const py_ext[] = {".py", ".pyx", ".pxd", ".pxi", NULL};
  const char* dot = strrchr(name, '.');
  if (dot == NULL) return 0;
  for (int i = 0; c_ext[i]; i++)
    if (!strcmp(dot, c_ext[i])) {
      *l = LANG_C;
      *cython = 0;
      return 1;
    }
  for (int i = 0; py_ext[i]; i++)
    if (!strcmp(dot, py_ext[i])) {
      *l = LANG_PY;
      *cython = i > 0;
      return 1;
    }
  return 0;
}

static void file_error(scan* s, const char* path, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "ccshim scan: %s: ", path);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  s->errors++;
}

/* Scans the text of one file; takes `code` (len + 1 bytes, from malloc). */
void scan_text(scan* s, const char* shown, lang l, char* code, size_t len) {
  source src;
  memset(&src, 0, sizeof src);
  src.path = scan_keep_path(s, shown);
  src.lang = l;
  src.code = code;
  src.len = len;
  src.code[len] = '\0';
  const char* nul = memchr(code, '\0', len);
  if (nul != NULL) {
    file_error(s, shown, "a binary file (NUL byte at offset %zu), not %s source; not scanned",
               (size_t)(nul - code), l == LANG_C ? "C/C++/CUDA/HIP" : "Python/Cython");
    goto done;
  }
  size_t lines = 1;
  for (size_t i = 0; i < len; i++) lines += code[i] == '\n';
  src.skel = malloc(len + 1);
  src.line_at = malloc(lines * sizeof(size_t));
  if (src.skel == NULL || src.line_at == NULL) {
    file_error(s, shown, "out of memory for %zu bytes", len);
    goto done;
  }
  memcpy(src.skel, code, len + 1);
  src.line_at[0] = 0;
  for (size_t i = 0, ln = 1; i < len; i++)
    if (code[i] == '\n') src.line_at[ln++] = i + 1;
  src.num_lines = lines;
  scan_blank(&src);
  if (len > UINT32_MAX || scan_match_brackets(&src) != 0) {
    file_error(s, shown, "out of memory for %zu bytes", len);
    goto done;
  }
  for (const char* m = src.code; (m = strstr(m, "extern \"C\"")) != NULL; m += 10) {
    src.externs =
        scan_grow(src.externs, &src.externs_cap, sizeof *src.externs, src.num_externs + 1);
    src.externs[src.num_externs++] = (size_t)(m - src.code);
  }
  scan_source(s, &src);
  s->files++;
  s->lines += lines;
done:
  free(src.code);
  free(src.skel);
  free(src.line_at);
  free(src.opens);
  free(src.closes);
  free(src.externs);
}

/* Opens a path of any length: one open() below PATH_MAX, else component
 * by component with openat(), in pieces that each fit.  Returns an fd or
 * -1 with errno set. */
int scan_open_any(const char* path, int flags) {
  size_t len = strlen(path);
  if (len < PATH_MAX) return open(path, flags);
  int dir = AT_FDCWD;
  const char* p = path;
  for (;;) {
    size_t rest = strlen(p);
    if (rest < PATH_MAX) {
      int fd = openat(dir, p, flags);
      int e = errno;
      if (dir != AT_FDCWD) close(dir);
      errno = e;
      return fd;
    }
    /* The longest piece that ends at a '/' and fits. */
    size_t cut = PATH_MAX - 1;
    while (cut > 0 && p[cut] != '/') cut--;
    if (cut == 0) {
      if (dir != AT_FDCWD) close(dir);
      errno = ENAMETOOLONG; /* one name longer than PATH_MAX */
      return -1;
    }
    char* piece = strndup(p, cut);
    int next = piece ? openat(dir, piece, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    int e = errno;
    free(piece);
    if (dir != AT_FDCWD) close(dir);
    if (next < 0) {
      errno = e;
      return -1;
    }
    dir = next;
    p += cut;
    while (*p == '/') p++;
  }
}

/* Reads one file.  Only a regular file is read: the open never blocks (a
 * FIFO or a device behind a name or a symbolic link is refused with a
 * line, not waited on). */
void scan_file(scan* s, const char* path, const char* shown, lang l) {
  int fd = scan_open_any(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    file_error(s, shown, "cannot read: %s", strerror(errno));
    return;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    file_error(s, shown, "not a regular file (%s); not scanned",
               S_ISFIFO(st.st_mode)   ? "a FIFO"
               : S_ISCHR(st.st_mode)  ? "a character device"
               : S_ISBLK(st.st_mode)  ? "a block device"
               : S_ISSOCK(st.st_mode) ? "a socket"
               : S_ISDIR(st.st_mode)  ? "a directory"
                                      : "unknown kind");
    close(fd);
    return;
  }
  if (st.st_size > MAX_FILE_BYTES) {
    file_error(s, shown, "larger than %d MiB; not a source file a person wrote, not scanned",
               MAX_FILE_BYTES >> 20);
    close(fd);
    return;
  }
  if (l == LANG_PY) { /* read by ccshim.scan when the walk is over (pyfiles.c) */
    scan_python_later(s, path, shown);
    close(fd);
    return;
  }
  FILE* fp = fdopen(fd, "rb");
  if (fp == NULL) {
    file_error(s, shown, "cannot read: %s", strerror(errno));
    close(fd);
    return;
  }
  char* code = malloc((size_t)st.st_size + 1);
  if (code == NULL) {
    file_error(s, shown, "out of memory for %lld bytes", (long long)st.st_size);
    fclose(fp);
    return;
  }
  size_t len = fread(code, 1, (size_t)st.st_size, fp);
  int failed = ferror(fp);
  fclose(fp);
  if (failed) {
    file_error(s, shown, "read error");
    free(code);
    return;
  }
  scan_text(s, shown, l, code, len);
}

/* One directory being walked: its entries in name order, and where the
 * walk is in them. */
typedef struct entry {
  char* name;
  unsigned char is_dir, is_file; /* is_file: a regular file or a symbolic link */
} entry;

typedef struct level {
  char* path;  /* as opened */
  char* shown; /* as reported: relative to the scanned directory */
  entry* entries;
  size_t n, next;
} level;

static int by_name(const void* a, const void* b) {
  return strcmp(((const entry*)a)->name, ((const entry*)b)->name);
}

static char* join(const char* a, const char* b) {
  size_t la = strlen(a), lb = strlen(b);
  char* p = malloc(la + lb + 2);
  if (p == NULL) {
    fprintf(stderr, "ccshim scan: out of memory\n");
    exit(2);
  }
  memcpy(p, a, la);
  size_t o = la;
  if (la) p[o++] = '/';
  memcpy(p + o, b, lb + 1);
  return p;
}

/* Lists a directory into `lv`, its entries sorted; 0, or -1 with a line. */
static int list(scan* s, level* lv) {
  int fd = scan_open_any(lv->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd >= 0 ? fdopendir(fd) : NULL;
  if (d == NULL) {
    file_error(s, lv->shown[0] ? lv->shown : lv->path, "cannot list: %s", strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  size_t cap = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    const char* name = e->d_name;
    if (name[0] == '.' || !strcmp(name, "__pycache__")) continue;
    struct stat st;
    if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      char* rel = join(lv->shown, name);
      file_error(s, rel, "cannot stat: %s", strerror(errno));
      free(rel);
      continue;
    }
    lv->entries = scan_grow(lv->entries, &cap, sizeof *lv->entries, lv->n + 1);
    entry* en = &lv->entries[lv->n++];
    en->name = scan_strdup(name);
    en->is_dir = S_ISDIR(st.st_mode);
    en->is_file = !en->is_dir;
  }
  closedir(d);
  if (lv->n) qsort(lv->entries, lv->n, sizeof *lv->entries, by_name);
  return 0;
}

static void level_free(level* lv) {
  for (size_t i = 0; i < lv->n; i++) free(lv->entries[i].name);
  free(lv->entries);
  free(lv->path);
  free(lv->shown);
}

/* Depth first in name order, so that reports are the same on every machine;
 * iterative, so that no depth overflows a stack, and by openat() below
 * PATH_MAX pieces, so that no path is too long.  Hidden directories (.git),
 * __pycache__ and symbolic links to directories are not entered; a file
 * with a source extension that is not a regular file (behind a symbolic
 * link too) gets a line on stderr. */
void scan_walk(scan* s, const char* dir) {
  level* stack = NULL;
  size_t depth = 0, cap = 0;
  stack = scan_grow(stack, &cap, sizeof *stack, 1);
  memset(&stack[0], 0, sizeof stack[0]);
  stack[0].path = scan_strdup(dir);
  stack[0].shown = scan_strdup("");
  if (list(s, &stack[0]) != 0) {
    level_free(&stack[0]);
    free(stack);
    return;
  }
  depth = 1;
  while (depth > 0) {
    level* top = &stack[depth - 1];
    if (top->next == top->n) {
      level_free(top);
      depth--;
      continue;
    }
    const entry* en = &top->entries[top->next++];
    char* path = join(top->path, en->name);
    char* rel = join(top->shown, en->name);
    lang l;
    int cython;
    if (en->is_dir) {
      stack = scan_grow(stack, &cap, sizeof *stack, depth + 1);
      level* lv = &stack[depth];
      memset(lv, 0, sizeof *lv);
      lv->path = path;
      lv->shown = rel;
      if (list(s, lv) == 0)
        depth++;
      else
        level_free(lv);
      continue;
    }
    if (en->is_file && scan_source_lang(en->name, &l, &cython))
      scan_file(s, path, rel, l);
    else if (en->is_file)
      scan_maybe_artifact(s, path, rel);
    free(path);
    free(rel);
  }
  free(stack);
}
