/*
 * Fuzzes `ccshim scan` on directory shapes, not file contents: the input is
 * a recipe that builds a tree in a scratch folder, then scan walks it.
 * Steps: a subdirectory (descend), back up, a chain of up to 300 levels, a
 * source file with a few bytes of text, a name of up to 255 bytes in any
 * bytes but '/' and NUL (so not UTF-8, often), a FIFO, and symbolic links:
 * to the folder above (a cycle), to itself, to a FIFO, to a file, dangling.
 *
 * Properties: scan never crashes, never blocks (a FIFO is refused, not
 * opened for a blocking read), and exits 0 or 1 (a file it could not read
 * is reported, not fatal); never 2, since the tree's root is a directory.
 * Output goes to /dev/null.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_input.h"
#include "tools.h"

enum { MAX_DEPTH = 300, MAX_STEPS = 64 };

/* (The harness opens what it makes with O_NONBLOCK: a name it made a FIFO
 * before must not block it.) */

/* Removes everything below the directory `fd` (closed here). */
static void empty_dir(int fd) {
  DIR* d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return;
  }
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      if (sub >= 0) empty_dir(sub);
      unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
    } else {
      unlinkat(dirfd(d), e->d_name, 0);
    }
  }
  closedir(d);
}

/* A name from the input: printable most of the time, any byte but '/' and
 * NUL otherwise, never "." or "..". */
static void take_name(fuzz_input* in, char* name) {
  unsigned kind = take_below(in, 8);
  size_t n = kind == 7 ? 255 : 1 + take_below(in, 12);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = kind >= 5 ? take_u8(in) : (unsigned char)('a' + take_below(in, 26));
    if (c == '/' || c == '\0') c = 0xe9; /* Latin-1 'e acute': not UTF-8 alone */
    name[i] = (char)c;
  }
  name[n] = '\0';
  if (!strcmp(name, ".") || !strcmp(name, "..")) name[0] = 'x';
}

static const char* const extensions[] = {".cc", ".py", ".cu", ".pyx", ".h", ".txt"};

static char root[4096];

static void remove_root(void) {
  int fd = open(root, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) empty_dir(fd);
  rmdir(root);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static int ready;
  if (!ready) {
    /* tmpfs where there is one: directories are made and removed by the
     * thousand, which costs ten times more on a disk's file system. */
    struct stat st;
    const char* base = getenv("CCSHIM_FUZZ_TREE_BASE"); /* dev/run_fuzzers.sh's */
    if (base == NULL)
      base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
    snprintf(root, sizeof root, "%s/ccshim-fuzz-tree-%d", base, (int)getpid());
    if (mkdir(root, 0700) != 0) abort();
    atexit(remove_root);
    if (freopen("/dev/null", "w", stdout) == NULL) abort();
    /* The .py files a tree holds are read by ccshim.scan in Python
     * (fuzz_scan_reader.py fuzzes that); here a "Python" that reads none,
     * so that each is said not read, at the cost of an exec, not of a
     * Python's start. */
    setenv("CCSHIM_PYTHON", "false", 1);
    ready = 1;
  }
  if (size == 0) return 0;
  int top = open(root, O_RDONLY | O_DIRECTORY);
  if (top < 0) abort();
  empty_dir(dup(top));

  fuzz_input in = {data, size};
  int fds[MAX_DEPTH + 1];
  int depth = 0;
  fds[0] = top;
  char name[256 + 8], other[256 + 8];
  for (int step = 0; step < MAX_STEPS && in.size > 0; step++) {
    int here = fds[depth];
    switch (take_below(&in, 9)) {
      case 0: /* a subdirectory, and into it */
      case 1: {
        take_name(&in, name);
        mkdirat(here, name, 0700);
        int sub = openat(here, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        if (sub >= 0 && depth < MAX_DEPTH)
          fds[++depth] = sub;
        else if (sub >= 0)
          close(sub);
        break;
      }
      case 2: /* back up */
        if (depth > 0) close(fds[depth--]);
        break;
      case 3: { /* a chain of levels of one short name */
        int levels = 1 + (int)take_below(&in, 255);
        for (int k = 0; k < levels && depth < MAX_DEPTH; k++) {
          mkdirat(fds[depth], "d", 0700);
          int sub = openat(fds[depth], "d", O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
          if (sub < 0) break;
          fds[++depth] = sub;
        }
        break;
      }
      case 4: { /* a source file (or not) with a few bytes */
        take_name(&in, name);
        strcat(name, extensions[take_below(&in, 6)]);
        int fd = openat(here, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK, 0600);
        if (fd >= 0) {
          /* Python: a registration through a function of its own, which
           * ccshim.scan resolves at each call once every file is read. */
          static const char c_text[] =
              "void k(void* out, const void** in) {}\nXLA_CPU_REGISTER_CUSTOM_CALL_TARGET(k);\n";
          static const char py_text[] =
              "def reg(name, cap, backend):\n    if v:\n"
              "        register_custom_call_target(name, cap, backend)\n"
              "reg(f'k_{x}', c, 'cpu')\nreg('k', cap=c, backend=b)\n";
          int py = strstr(name, ".py") != NULL;
          size_t n = take_below(&in, py ? sizeof py_text : sizeof c_text);
          if (write(fd, py ? py_text : c_text, n) < 0) abort();
          close(fd);
        }
        break;
      }
      case 5: /* a FIFO with a source extension */
        take_name(&in, name);
        strcat(name, extensions[take_below(&in, 5)]);
        mkfifoat(here, name, 0600);
        break;
      case 6: /* a link to the folder above: a cycle */
        take_name(&in, name);
        symlinkat("..", here, name);
        break;
      case 7: /* a link to itself, or dangling */
        take_name(&in, name);
        strcat(name, ".cc");
        symlinkat(take_below(&in, 2) ? name : "nowhere/at/all.cc", here, name);
        break;
      default: { /* a link with a source extension to something made here */
        take_name(&in, other);
        if (take_below(&in, 2))
          mkfifoat(here, other, 0600);
        else
          close(openat(here, other, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0600));
        take_name(&in, name);
        strcat(name, ".py");
        symlinkat(other, here, name);
        break;
      }
    }
  }
  while (depth > 0) close(fds[depth--]);
  close(top);

  /* scan's lines about unreadable files go to /dev/null too, for this call
   * only: the fuzzer's own reports need stderr. */
  char* argv[] = {root, (char*)"--json", NULL};
  fflush(stderr);
  int saved = dup(2), null = open("/dev/null", O_WRONLY);
  dup2(null, 2);
  int rc = ccshim_scan_main(data[0] & 1 ? 2 : 1, argv);
  fflush(stdout);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(null);
  if (rc != 0 && rc != 1) abort();
  return 0;
}
