/*
 * Legacy CPU kernels that misbehave the ways real ones do, for the tests of
 * `ccshim conform`'s isolation (tests/hostile/test_hostile_cli.py).  Built
 * like a user's library: no ccshim header, plain C.  With
 * HOSTILE_INIT_EXIT or HOSTILE_INIT_ABORT the library's initialiser exits
 * or aborts as soon as it is loaded.
 */
#define _GNU_SOURCE /* sigset_t and its calls, fork */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(HOSTILE_INIT_EXIT)
__attribute__((constructor)) static void init_exits(void) { exit(0); }
#elif defined(HOSTILE_INIT_ABORT)
__attribute__((constructor)) static void init_aborts(void) { abort(); }
#endif

/* out = in[0]: (f32[4]) -> f32[4]. */
void copy4_v1(void* out, const void** in) { memcpy(out, in[0], 4 * sizeof(float)); }

/* out[0] = in[0][0], for signatures with any number of f32[1] operands. */
void first_v1(void* out, const void** in) { *(float*)out = *(const float*)in[0]; }

/* Blocks SIGALRM, then waits for nothing, forever. */
void block_alarm_v1(void* out, const void** in) {
  (void)out;
  (void)in;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGALRM);
  sigprocmask(SIG_BLOCK, &set, NULL);
  for (;;) pause();
}

/* Stops itself. */
void stop_self_v1(void* out, const void** in) {
  raise(SIGSTOP);
  copy4_v1(out, in);
}

/* Talks on stdout and stderr (with JSON-looking text), then copies. */
void chatty_v1(void* out, const void** in) {
  printf("{\"kernel\": \"hello from chatty_v1\"}\n");
  fprintf(stderr, "chatty_v1: a warning on stderr\n");
  copy4_v1(out, in);
}

/* Leaves a child behind that keeps the caller's stdout and stderr open
 * for a minute, then copies. */
void forks_v1(void* out, const void** in) {
  if (fork() == 0) {
    sleep(60);
    _exit(0);
  }
  copy4_v1(out, in);
}
