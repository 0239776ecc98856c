/*
 * Out of memory where an error is made: XLA_FFI_Error_Create cannot return
 * NULL, which XLA reads as success.  This executable defines malloc and
 * friends (forwarding to glibc's) so that it can make them fail; the
 * runtime then hands out its one static out-of-memory error, which
 * Error_Destroy and ccshim_error_free leave alone.
 */
#include <stdatomic.h>
#include <string.h>

#include "ccshim/ccshim.h"
#include "check.h"

#include "malloc_interpose.h"

#if !CCSHIM_TEST_OWNS_MALLOC
int main(void) {
  printf("skipped: the sanitizers own malloc in this build\n");
  return CHECK_SKIP_CODE;
}
#else

static atomic_int failing;

INTERPOSE void* malloc(size_t n) { return atomic_load(&failing) ? NULL : __libc_malloc(n); }
INTERPOSE void* calloc(size_t n, size_t m) {
  return atomic_load(&failing) ? NULL : __libc_calloc(n, m);
}
INTERPOSE void* realloc(void* p, size_t n) {
  return atomic_load(&failing) ? NULL : __libc_realloc(p, n);
}

static XLA_FFI_Error* create(const XLA_FFI_Api* api, const char* message) {
  XLA_FFI_Error_Create_Args args;
  memset(&args, 0, sizeof args);
  args.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
  args.message = message;
  args.errc = XLA_FFI_Error_Code_INVALID_ARGUMENT;
  return api->XLA_FFI_Error_Create(&args);
}

int main(void) {
  const XLA_FFI_Api* api = ccshim_ffi_api();
  XLA_FFI_Error* fine = create(api, "a message");
  CHECK(fine != NULL);
  CHECK_EQ(ccshim_error_code(fine), XLA_FFI_Error_Code_INVALID_ARGUMENT);
  ccshim_error_free(fine);

  atomic_store(&failing, 1);
  XLA_FFI_Error* e1 = create(api, "no memory for this one");
  XLA_FFI_Error* e2 = create(api, "nor for this one");
  atomic_store(&failing, 0);
  CHECK(e1 != NULL); /* NULL would read as success */
  CHECK(e1 == e2);   /* the one static error */
  CHECK_EQ(ccshim_error_code(e1), XLA_FFI_Error_Code_RESOURCE_EXHAUSTED);
  CHECK_CONTAINS(ccshim_error_message(e1), "out of memory");

  XLA_FFI_Error_Destroy_Args destroy;
  memset(&destroy, 0, sizeof destroy);
  destroy.struct_size = XLA_FFI_Error_Destroy_Args_STRUCT_SIZE;
  destroy.error = e1;
  api->XLA_FFI_Error_Destroy(&destroy); /* leaves it alone */
  ccshim_error_free(e2);
  CHECK_EQ(ccshim_error_code(e1), XLA_FFI_Error_Code_RESOURCE_EXHAUSTED);
  printf("out of memory: Error_Create gives the static RESOURCE_EXHAUSTED error, never NULL\n");
  return 0;
}
#endif
