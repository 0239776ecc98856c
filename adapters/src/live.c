/*
 * The set of live adapters: every adapter ccshim_wrap made and
 * ccshim_adapter_free has not freed.  ccshim_adapter_free asks it first, so
 * a second free of the same pointer (or a pointer wrap never made) is an
 * error that says so instead of a double free inside the allocator.
 *
 * An open-addressing hash set with linear probing and backward-shift
 * deletion (no tombstones), behind one mutex: it is touched at wrap and at
 * free, never on a call.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "adapter_internal.h"

static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static const ccshim_adapter** live; /* NULL = empty slot */
static size_t live_cap, live_count; /* live_cap: 0 or a power of two */

static size_t home(const ccshim_adapter* a, size_t cap) {
  uint64_t h = (uint64_t)(uintptr_t)a;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL; /* MurmurHash3's finaliser */
  h ^= h >> 33;
  return (size_t)h & (cap - 1);
}

static void place(const ccshim_adapter** table, size_t cap, const ccshim_adapter* a) {
  size_t i = home(a, cap);
  while (table[i] != NULL) i = (i + 1) & (cap - 1);
  table[i] = a;
}

static int grow(void) {
  size_t cap = live_cap ? 2 * live_cap : 64;
  const ccshim_adapter** table = calloc(cap, sizeof *table);
  if (table == NULL) return -1;
  for (size_t i = 0; i < live_cap; i++)
    if (live[i] != NULL) place(table, cap, live[i]);
  free((void*)live);
  live = table;
  live_cap = cap;
  return 0;
}

/* Index of a, or live_cap when absent. */
static size_t find(const ccshim_adapter* a) {
  if (live_cap == 0) return 0;
  for (size_t i = home(a, live_cap);; i = (i + 1) & (live_cap - 1)) {
    if (live[i] == a) return i;
    if (live[i] == NULL) return live_cap;
  }
}

int ccshim__live_add(const ccshim_adapter* a) {
  pthread_mutex_lock(&live_mu);
  int rc = 0;
  if (2 * (live_count + 1) > live_cap) rc = grow(); /* at most half full */
  if (rc == 0) {
    place(live, live_cap, a);
    live_count++;
  }
  pthread_mutex_unlock(&live_mu);
  return rc;
}

int ccshim__live_has(const ccshim_adapter* a) {
  pthread_mutex_lock(&live_mu);
  int found = find(a) < live_cap;
  pthread_mutex_unlock(&live_mu);
  return found;
}

int ccshim__live_remove(const ccshim_adapter* a) {
  pthread_mutex_lock(&live_mu);
  size_t i = find(a);
  int found = i < live_cap;
  if (found) {
    /* Backward shift: move later members of the run into the hole when
     * the hole lies between their home and where they sit. */
    live[i] = NULL;
    for (size_t j = (i + 1) & (live_cap - 1); live[j] != NULL; j = (j + 1) & (live_cap - 1)) {
      size_t h = home(live[j], live_cap);
      int movable = i <= j ? (h <= i || h > j) : (h <= i && h > j);
      if (movable) {
        live[i] = live[j];
        live[j] = NULL;
        i = j;
      }
    }
    live_count--;
  }
  pthread_mutex_unlock(&live_mu);
  return found;
}
