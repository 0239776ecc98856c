/*
 * The legacy target registry (XLA's CustomCallTargetRegistry): a global map
 * from (symbol, platform), compared exactly, to a kernel address.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base_internal.h"
#include "ccshim/legacy.h"

typedef struct target {
  char* name;
  char* platform;
  ccshim_legacy_fn fn;
} target;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static target* targets;
static size_t num_targets, cap_targets;
static size_t conflicts;

static target* find(const char* name, const char* platform) {
  for (size_t i = 0; i < num_targets; i++)
    if (!strcmp(targets[i].name, name) && !strcmp(targets[i].platform, platform))
      return &targets[i];
  return NULL;
}

/* Doubles the table; called with mu held. */
static int grow(void) {
  size_t cap = cap_targets ? 2 * cap_targets : 16;
  target* t = realloc(targets, cap * sizeof *t);
  if (t == NULL) return -1;
  targets = t;
  cap_targets = cap;
  return 0;
}

ccshim_status ccshim_legacy_register(const char* name, ccshim_legacy_fn fn, const char* platform) {
  if (name == NULL || platform == NULL || fn == NULL)
    return ccshim__fail(CCSHIM_EINVAL, "legacy register: %s is NULL",
                        name == NULL       ? "name"
                        : platform == NULL ? "platform"
                                           : "kernel");
  ccshim_status st = CCSHIM_OK;
  pthread_mutex_lock(&mu);
  target* t = find(name, platform);
  if (t != NULL) {
    if (t->fn != fn)
      st = ccshim__fail(CCSHIM_EEXIST,
                        "legacy target '%s' for platform '%s' is already "
                        "registered with a different address",
                        name, platform);
  } else if (num_targets == cap_targets && grow() != 0) {
    st = ccshim__fail(CCSHIM_ENOMEM, "out of memory");
  } else {
    char* n = ccshim__strndup(name, strlen(name));
    char* p = ccshim__strndup(platform, strlen(platform));
    if (n == NULL || p == NULL) {
      free(n);
      free(p);
      st = ccshim__fail(CCSHIM_ENOMEM, "out of memory");
    } else {
      targets[num_targets++] = (target){n, p, fn};
    }
  }
  pthread_mutex_unlock(&mu);
  return st;
}

void ccshim_legacy_register_at_load(const char* name, ccshim_legacy_fn fn, const char* platform) {
  if (ccshim_legacy_register(name, fn, platform) == CCSHIM_OK) return;
  pthread_mutex_lock(&mu);
  conflicts++;
  pthread_mutex_unlock(&mu);
  fprintf(stderr, "ccshim: %s (the first registration is kept)\n", ccshim_last_error());
}

ccshim_legacy_fn ccshim_legacy_lookup(const char* name, const char* platform) {
  if (name == NULL || platform == NULL) return NULL;
  pthread_mutex_lock(&mu);
  target* t = find(name, platform);
  ccshim_legacy_fn fn = t ? t->fn : NULL;
  pthread_mutex_unlock(&mu);
  return fn;
}

size_t ccshim_legacy_count(void) {
  pthread_mutex_lock(&mu);
  size_t n = num_targets;
  pthread_mutex_unlock(&mu);
  return n;
}

ccshim_status ccshim_legacy_target(size_t index, const char** name, const char** platform,
                                   ccshim_legacy_fn* fn) {
  ccshim_status st = CCSHIM_OK;
  pthread_mutex_lock(&mu);
  if (index >= num_targets) {
    st = ccshim__fail(CCSHIM_ENOENT, "legacy target %zu: only %zu registered", index, num_targets);
  } else {
    if (name) *name = targets[index].name;
    if (platform) *platform = targets[index].platform;
    if (fn) *fn = targets[index].fn;
  }
  pthread_mutex_unlock(&mu);
  return st;
}

size_t ccshim_legacy_conflicts(void) {
  pthread_mutex_lock(&mu);
  size_t n = conflicts;
  pthread_mutex_unlock(&mu);
  return n;
}
