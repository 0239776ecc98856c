/*
 * XlaCustomCallStatusSetSuccess / SetFailure, exported with C linkage and
 * XLA's prototypes, working on the libstdc++ layout of status_impl.h.
 *
 * A message of 16 bytes or more lives on the heap, and XLA frees it with
 * C++'s operator delete when the status is XLA's.  So the memory comes from
 * the process's operator new (found once with dlsym) when a C++ runtime is
 * loaded, and from malloc otherwise, and is freed by the matching function.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base_internal.h"
#include "ccshim/legacy.h"
#include "status_impl.h"

typedef void* (*alloc_fn)(size_t size, const void* nothrow_tag);
typedef void (*dealloc_fn)(void* p);

static pthread_once_t heap_once = PTHREAD_ONCE_INIT;
static alloc_fn cxx_new;      /* operator new(size_t, const std::nothrow_t&) */
static dealloc_fn cxx_delete; /* operator delete(void*) */

static void find_cxx_heap(void) {
  void* n = dlsym(RTLD_DEFAULT, "_ZnwmRKSt9nothrow_t");
  void* d = dlsym(RTLD_DEFAULT, "_ZdlPv");
  if (n != NULL && d != NULL) {
    memcpy(&cxx_new, &n, sizeof cxx_new);
    memcpy(&cxx_delete, &d, sizeof cxx_delete);
  }
}

static void* heap_alloc(size_t size) {
  pthread_once(&heap_once, find_cxx_heap);
  static const char nothrow_tag = 0; /* std::nothrow_t is empty */
  return cxx_new ? cxx_new(size, &nothrow_tag) : malloc(size);
}

static void heap_free(void* p) {
  pthread_once(&heap_once, find_cxx_heap);
  if (cxx_delete)
    cxx_delete(p);
  else
    free(p);
}

void ccshim__status_release(XlaCustomCallStatus* s) {
  if (s->engaged && s->data != s->u.local) heap_free(s->data);
  s->engaged = 0;
}

CCSHIM_API void XlaCustomCallStatusSetSuccess(XlaCustomCallStatus* status) {
  if (status != NULL) ccshim__status_release(status);
}

CCSHIM_API void XlaCustomCallStatusSetFailure(XlaCustomCallStatus* status, const char* message,
                                              size_t message_len) {
  if (status == NULL) return;
  /* XLA copies up to message_len bytes or to the first NUL, whichever comes
   * first; strnlen gives the same bytes without reading past message_len
   * when a kernel forgot the terminator.  A NULL message fails with "". */
  size_t n = message ? strnlen(message, message_len) : 0;
  ccshim__status_release(status);
  char* dst = status->u.local;
  if (n >= sizeof status->u.local) {
    dst = heap_alloc(n + 1);
    if (dst == NULL) { /* keep the failure, lose the text */
      dst = status->u.local;
      n = 0;
    } else {
      status->u.capacity = n;
    }
  }
  if (n) memcpy(dst, message, n);
  dst[n] = '\0';
  status->data = dst;
  status->length = n;
  status->engaged = 1;
}

XlaCustomCallStatus* ccshim_legacy_status_init(ccshim_legacy_status_storage* storage) {
  if (storage == NULL) return NULL;
  XlaCustomCallStatus* s = (XlaCustomCallStatus*)storage;
  memset(storage, 0, sizeof *storage);
  ccshim__status_init(s);
  return s;
}

const char* ccshim_legacy_status_message(const XlaCustomCallStatus* status, size_t* len) {
  if (status == NULL || !status->engaged) {
    if (len) *len = 0;
    return NULL;
  }
  if (len) *len = status->length;
  return status->data;
}

void ccshim_legacy_status_reset(XlaCustomCallStatus* status) {
  if (status != NULL) ccshim__status_release(status);
}
