/*
 * Code addresses for adapters.  XLA_FFI_Handler takes only the call frame,
 * so every adapter needs a function of its own that knows which plan to use.
 *
 * Prebuilt entries: CCSHIM_PREBUILT_ENTRIES static functions, entry k
 * loading slots[k] and tail-calling the adapter.  No code is generated at
 * run time and nothing is writable and executable; the cost is a load and a
 * jump.  A slot is taken at wrap and given back at free.
 *
 * Closures: libffi's ffi_closure_alloc + ffi_prep_closure_loc, bound to the
 * adapter as user data.  Unbounded, but slower (libffi marshals arguments
 * generically) and, with Debian's libffi 3.4, on a writable+executable page.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter_internal.h"

/* ---------------------------------------------------------------------------
 * Prebuilt entries
 * ------------------------------------------------------------------------ */

static const ccshim_adapter* _Atomic slots[CCSHIM_PREBUILT_ENTRIES];

#define ENTRY(id)                                                                     \
  static XLA_FFI_Error* entry_##id(XLA_FFI_CallFrame* frame) {                        \
    const ccshim_adapter* a = atomic_load_explicit(&slots[id], memory_order_acquire); \
    return a->call(a, frame);                                                         \
  }
#define ENTRY_ADDR(id) entry_##id,

/* 16 x 16 x 16 x 4 = 16384 entries named entry_0x0000 .. entry_0x3fff. */
/* One row of sixteen per level, kept by hand. */
// clang-format off
#define E1(M, p) \
  M(p##0) M(p##1) M(p##2) M(p##3) M(p##4) M(p##5) M(p##6) M(p##7) \
  M(p##8) M(p##9) M(p##a) M(p##b) M(p##c) M(p##d) M(p##e) M(p##f)
#define E2(M, p) \
  E1(M, p##0) E1(M, p##1) E1(M, p##2) E1(M, p##3) E1(M, p##4) E1(M, p##5) E1(M, p##6) E1(M, p##7) \
  E1(M, p##8) E1(M, p##9) E1(M, p##a) E1(M, p##b) E1(M, p##c) E1(M, p##d) E1(M, p##e) E1(M, p##f)
#define E3(M, p) \
  E2(M, p##0) E2(M, p##1) E2(M, p##2) E2(M, p##3) E2(M, p##4) E2(M, p##5) E2(M, p##6) E2(M, p##7) \
  E2(M, p##8) E2(M, p##9) E2(M, p##a) E2(M, p##b) E2(M, p##c) E2(M, p##d) E2(M, p##e) E2(M, p##f)
// clang-format on
#define ALL_ENTRIES(M) E3(M, 0x0) E3(M, 0x1) E3(M, 0x2) E3(M, 0x3)

ALL_ENTRIES(ENTRY)

static XLA_FFI_Handler* const entries[CCSHIM_PREBUILT_ENTRIES] = {ALL_ENTRIES(ENTRY_ADDR)};

_Static_assert(sizeof entries / sizeof entries[0] == CCSHIM_PREBUILT_ENTRIES,
               "one prebuilt entry per slot");

/* Free slots, as a stack of indices. */
static pthread_mutex_t slots_mu = PTHREAD_MUTEX_INITIALIZER;
static int32_t free_slots[CCSHIM_PREBUILT_ENTRIES];
static size_t num_free = (size_t)-1; /* filled on first use */

static void fill_free_slots(void) {
  if (num_free != (size_t)-1) return;
  for (int32_t i = 0; i < CCSHIM_PREBUILT_ENTRIES; i++)
    free_slots[i] = CCSHIM_PREBUILT_ENTRIES - 1 - i; /* hand out 0 first */
  num_free = CCSHIM_PREBUILT_ENTRIES;
}

static int32_t take_slot(void) {
  pthread_mutex_lock(&slots_mu);
  fill_free_slots();
  int32_t s = num_free ? free_slots[--num_free] : -1;
  pthread_mutex_unlock(&slots_mu);
  return s;
}

static void give_slot(int32_t s) {
  pthread_mutex_lock(&slots_mu);
  free_slots[num_free++] = s;
  pthread_mutex_unlock(&slots_mu);
}

size_t ccshim_prebuilt_entries_free(void) {
  pthread_mutex_lock(&slots_mu);
  fill_free_slots();
  size_t n = num_free;
  pthread_mutex_unlock(&slots_mu);
  return n;
}

/* ---------------------------------------------------------------------------
 * libffi closures
 * ------------------------------------------------------------------------ */

static void closure_entry(ffi_cif* cif, void* ret, void** args, void* user) {
  (void)cif;
  XLA_FFI_CallFrame* frame = *(XLA_FFI_CallFrame**)args[0];
  const ccshim_adapter* a = user;
  *(XLA_FFI_Error**)ret = a->call(a, frame);
}

static ccshim_status bind_closure(ccshim_adapter* a) {
  void* code = NULL;
  a->cif_args[0] = &ffi_type_pointer;
  if (ffi_prep_cif(&a->cif, FFI_DEFAULT_ABI, 1, &ffi_type_pointer, a->cif_args) != FFI_OK)
    return ccshim__fail(CCSHIM_EUNSUPPORTED, "wrap: ffi_prep_cif failed");
  a->closure = ffi_closure_alloc(sizeof(ffi_closure), &code);
  if (a->closure == NULL) return ccshim__fail(CCSHIM_ENOMEM, "wrap: ffi_closure_alloc failed");
  if (ffi_prep_closure_loc(a->closure, &a->cif, closure_entry, a, code) != FFI_OK) {
    ffi_closure_free(a->closure);
    a->closure = NULL;
    return ccshim__fail(CCSHIM_EUNSUPPORTED, "wrap: ffi_prep_closure_loc failed");
  }
  memcpy(&a->handler, &code, sizeof code);
  a->entry = CCSHIM_ENTRY_CLOSURE;
  return CCSHIM_OK;
}

/* Reads /proc/self/maps for the mapping that holds `addr`; returns 1 when it
 * is writable and executable, 0 when not, -1 when unknown. */
static int mapping_is_wx(const void* addr) {
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) return -1;
  char* line = NULL; /* whole lines: a long file name must not split one */
  size_t cap = 0;
  int result = -1;
  uintptr_t p = (uintptr_t)addr;
  while (getline(&line, &cap, maps) > 0) {
    unsigned long lo, hi;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3) continue;
    if (p >= lo && p < hi) {
      result = perms[1] == 'w' && perms[2] == 'x';
      break;
    }
  }
  free(line);
  fclose(maps);
  return result;
}

static pthread_once_t wx_once = PTHREAD_ONCE_INIT;
static int closures_wx = 1;

/* The probe allocates a closure and reads its mapping.  libffi keeps the
 * pages of a freed closure for later ones, so probing here would leave a
 * writable+executable page in this process even when the answer is to
 * refuse: it runs in a child instead, which answers one byte through a pipe
 * and exits.  The child only allocates and reads a file; should it not
 * answer within a second (a lock held across fork by another thread, say),
 * it is killed, and the answer is the safe one: W+X needed. */
static char closure_answer(void* unused) {
  (void)unused;
  void* code = NULL;
  if (ffi_closure_alloc(sizeof(ffi_closure), &code) == NULL) return 'x';
  return mapping_is_wx(code) == 0 ? 'n' : 'x'; /* unknown counts as W+X */
}

static void probe_wx(void) {
  closures_wx = ccshim__ask_child(closure_answer, NULL, 1000, 'x') != 'n';
}

size_t ccshim_closure_size(void) { return sizeof(ffi_closure); }

int ccshim_closures_need_wx(void) {
  pthread_once(&wx_once, probe_wx);
  return closures_wx;
}

static int wx_allowed(int allow_wx) {
  const char* env = getenv("CCSHIM_ALLOW_WX");
  return allow_wx || (env != NULL && strcmp(env, "1") == 0) || !ccshim_closures_need_wx();
}

/* ---------------------------------------------------------------------------
 * Binding
 * ------------------------------------------------------------------------ */

ccshim_status ccshim__entry_bind(ccshim_adapter* a, ccshim_entry_kind kind, int allow_wx) {
  if (kind == CCSHIM_ENTRY_CLOSURE) return bind_closure(a);
  int32_t s = take_slot();
  if (s >= 0) {
    a->slot = s;
    a->entry = CCSHIM_ENTRY_PREBUILT;
    a->handler = entries[s];
    atomic_store_explicit(&slots[s], a, memory_order_release);
    return CCSHIM_OK;
  }
  if (kind == CCSHIM_ENTRY_PREBUILT)
    return ccshim__fail(CCSHIM_EOVERFLOW,
                        "wrap: all %d prebuilt entry points are in use; free "
                        "an adapter or use CCSHIM_ENTRY_CLOSURE",
                        CCSHIM_PREBUILT_ENTRIES);
  if (!wx_allowed(allow_wx))
    return ccshim__fail(CCSHIM_EOVERFLOW,
                        "wrap: all %d prebuilt entry points are in use, and "
                        "libffi closures here need writable+executable memory; "
                        "allow that with ccshim_wrap_options.allow_wx or "
                        "CCSHIM_ALLOW_WX=1",
                        CCSHIM_PREBUILT_ENTRIES);
  return bind_closure(a);
}

void ccshim__entry_release(ccshim_adapter* a) {
  if (a->slot >= 0) {
    /* A handler that XLA could not still call (ccshim_adapter_free checks)
     * may yet be called by mistake: it then answers with an error. */
    atomic_store_explicit(&slots[a->slot], &ccshim__freed_adapter, memory_order_release);
    give_slot(a->slot);
    a->slot = -1;
  }
  if (a->closure != NULL) {
    ffi_closure_free(a->closure);
    a->closure = NULL;
  }
}
