/*
 * Asking a forked child: for questions whose answer might crash, hang or
 * change the asking process (making a closure, calling a function of
 * unknown ABI).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base_internal.h"

char ccshim__ask_child(char (*question)(void* arg), void* arg, int timeout_ms, char unknown) {
  int fds[2];
  if (pipe(fds) != 0) return unknown;
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return unknown;
  }
  if (pid == 0) {
    close(fds[0]);
    /* Quiet and without a core file, whatever the question does: a fault
     * ends the child by default, not through a handler the parent set
     * (Python's faulthandler would report it on a file it kept open). */
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) signal(faults[i], SIG_DFL);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
    }
    char answer = question(arg);
    ssize_t w = write(fds[1], &answer, 1);
    _exit(w == 1 ? 0 : 1);
  }
  close(fds[1]);
  struct pollfd p = {.fd = fds[0], .events = POLLIN};
  char answer = unknown;
  int ready;
  do ready = poll(&p, 1, timeout_ms);
  while (ready < 0 && errno == EINTR);
  if (ready == 1 && read(fds[0], &answer, 1) != 1) answer = unknown;
  close(fds[0]);
  if (ready != 1) kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
  return answer;
}
