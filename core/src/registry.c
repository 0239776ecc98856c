/*
 * The handler registry, with XLA's rules (xla/ffi/ffi_registry.cc): platform
 * names canonicalised, the metadata query made at registration, the reported
 * version checked against 0.1 .. the runtime's own, traits OR-ed, the same
 * registration accepted twice and a different one refused.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "registry_internal.h"

typedef struct entry {
  char* name;
  char platform[64];
  ccshim_registration reg;
} entry;

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static entry* entries;
static size_t num_entries, cap_entries;

void ccshim__metadata_frame(const XLA_FFI_Api* api, ccshim__metadata_call* call) {
  /* Field for field what XLA's invoke.cc sends: the metadata reads 0.0 until
   * the handler writes it, ctx is NULL and every list is empty. */
  memset(call, 0, sizeof *call);
  call->metadata.struct_size = XLA_FFI_Metadata_STRUCT_SIZE;
  call->metadata.api_version.struct_size = XLA_FFI_Api_Version_STRUCT_SIZE;
  call->ext.extension_base.struct_size = XLA_FFI_Metadata_Extension_STRUCT_SIZE;
  call->ext.extension_base.type = XLA_FFI_Extension_Metadata;
  call->ext.metadata = &call->metadata;
  call->frame.struct_size = XLA_FFI_CallFrame_STRUCT_SIZE;
  call->frame.extension_start = &call->ext.extension_base;
  call->frame.api = api;
  call->frame.stage = XLA_FFI_ExecutionStage_EXECUTE;
  call->frame.args.struct_size = XLA_FFI_Args_STRUCT_SIZE;
  call->frame.rets.struct_size = XLA_FFI_Rets_STRUCT_SIZE;
  call->frame.attrs.struct_size = XLA_FFI_Attrs_STRUCT_SIZE;
}

ccshim_status ccshim__metadata_query(const XLA_FFI_Api* api, XLA_FFI_Handler* handler,
                                     XLA_FFI_Metadata* out, XLA_FFI_Error** error) {
  ccshim__metadata_call call;
  ccshim__metadata_frame(api, &call);
  *error = handler(&call.frame);
  if (*error != NULL)
    return ccshim__fail(CCSHIM_EHANDLER, "the metadata query failed: %s: %s",
                        ccshim_error_code_name((*error)->code), (*error)->message);
  *out = call.metadata;
  return CCSHIM_OK;
}

ccshim_status ccshim_query_metadata(XLA_FFI_Handler* handler, XLA_FFI_Metadata* out) {
  if (handler == NULL || out == NULL)
    return ccshim__fail(CCSHIM_EINVAL, "ccshim_query_metadata: %s is NULL",
                        handler == NULL ? "handler" : "out");
  XLA_FFI_Error* err = NULL;
  ccshim_status st = ccshim__metadata_query(ccshim_ffi_api(), handler, out, &err);
  ccshim_error_free(err);
  return st;
}

static entry* find(const char* name, const char* canonical) {
  for (size_t i = 0; i < num_entries; i++)
    if (strcmp(entries[i].name, name) == 0 && strcmp(entries[i].platform, canonical) == 0)
      return &entries[i];
  return NULL;
}

static int same_bundle(const XLA_FFI_Handler_Bundle* a, const XLA_FFI_Handler_Bundle* b) {
  return a->instantiate == b->instantiate && a->prepare == b->prepare &&
         a->initialize == b->initialize && a->execute == b->execute && a->record == b->record;
}

ccshim_status ccshim__register(const char* name, const char* platform,
                               const XLA_FFI_Handler_Bundle* bundle, XLA_FFI_Handler_Traits traits,
                               XLA_FFI_Error** handler_error) {
  *handler_error = NULL;
  if (name == NULL || platform == NULL || bundle == NULL)
    return ccshim__fail(CCSHIM_EINVAL, "register: %s is NULL",
                        name == NULL       ? "name"
                        : platform == NULL ? "platform"
                                           : "bundle");
  if (strlen(platform) >= 64)
    return ccshim__fail(CCSHIM_EINVAL,
                        "register: the platform name is %zu bytes long; "
                        "expected fewer than 64",
                        strlen(platform));
  char canonical[64];
  ccshim_canonical_platform(platform, canonical, sizeof canonical);
  if (bundle->execute == NULL)
    return ccshim__fail(CCSHIM_EINVAL,
                        "FFI handler for %s on a platform %s must provide an "
                        "execute implementation",
                        name, platform);

  XLA_FFI_Metadata md;
  ccshim_status st = ccshim__metadata_query(ccshim_ffi_api(), bundle->execute, &md, handler_error);
  if (st != CCSHIM_OK) return st;
  int major = md.api_version.major_version, minor = md.api_version.minor_version;
  int too_old = major < 0 || (major == 0 && minor < 1);
  int too_new =
      major > XLA_FFI_API_MAJOR || (major == XLA_FFI_API_MAJOR && minor > XLA_FFI_API_MINOR);
  if (too_old || too_new)
    return ccshim__fail(CCSHIM_EVERSION,
                        "XLA FFI handler registration for %s on platform %s (canonical %s) "
                        "failed because the handler's API version (%d.%d) is incompatible with "
                        "the framework's API version (%d.%d). Minimum supported API version is "
                        "(0.1).",
                        name, platform, canonical, major, minor, XLA_FFI_API_MAJOR,
                        XLA_FFI_API_MINOR);

  ccshim_registration reg;
  memset(&reg, 0, sizeof reg);
  reg.bundle = *bundle;
  reg.api_major = major;
  reg.api_minor = minor;
  reg.traits = md.traits | traits;
  if (bundle->instantiate != NULL) {
    XLA_FFI_Metadata imd;
    st = ccshim__metadata_query(ccshim_ffi_api(), bundle->instantiate, &imd, handler_error);
    if (st != CCSHIM_OK) return st;
    reg.state_type_id = imd.state_type_id.type_id;
  }

  pthread_mutex_lock(&registry_mu);
  entry* e = find(name, canonical);
  if (e != NULL) {
    const ccshim_registration* old = &e->reg;
    if (old->api_major != reg.api_major || old->api_minor != reg.api_minor ||
        old->traits != reg.traits || old->state_type_id != reg.state_type_id)
      st = ccshim__fail(CCSHIM_EEXIST,
                        "Duplicate FFI handler registration for %s on platform "
                        "%s (canonical %s) with different metadata: version "
                        "%d.%d traits %u vs version %d.%d traits %u",
                        name, platform, canonical, old->api_major, old->api_minor, old->traits,
                        reg.api_major, reg.api_minor, reg.traits);
    else if (!same_bundle(&old->bundle, &reg.bundle))
      st = ccshim__fail(CCSHIM_EEXIST,
                        "Duplicate FFI handler registration for %s on platform "
                        "%s (canonical %s) with different bundle addresses",
                        name, platform, canonical);
    pthread_mutex_unlock(&registry_mu);
    return st;
  }
  if (num_entries == cap_entries) {
    size_t cap = cap_entries ? 2 * cap_entries : 32;
    entry* grown = realloc(entries, cap * sizeof *grown);
    if (grown == NULL) {
      pthread_mutex_unlock(&registry_mu);
      return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
    }
    entries = grown;
    cap_entries = cap;
  }
  char* copy = ccshim__strndup(name, strlen(name));
  if (copy == NULL) {
    pthread_mutex_unlock(&registry_mu);
    return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
  }
  e = &entries[num_entries++];
  e->name = copy;
  memcpy(e->platform, canonical, sizeof canonical);
  e->reg = reg;
  pthread_mutex_unlock(&registry_mu);
  return CCSHIM_OK;
}

ccshim_status ccshim_register(const char* name, const char* platform,
                              const XLA_FFI_Handler_Bundle* bundle, XLA_FFI_Handler_Traits traits) {
  XLA_FFI_Error* handler_error = NULL;
  ccshim_status st = ccshim__register(name, platform, bundle, traits, &handler_error);
  ccshim_error_free(handler_error);
  return st;
}

ccshim_status ccshim_register_handler(const char* name, const char* platform,
                                      XLA_FFI_Handler* execute, XLA_FFI_Handler_Traits traits) {
  XLA_FFI_Handler_Bundle bundle = {NULL, NULL, NULL, execute, NULL};
  return ccshim_register(name, platform, &bundle, traits);
}

ccshim_status ccshim_lookup(const char* name, const char* platform, ccshim_registration* out) {
  if (name == NULL || platform == NULL || out == NULL)
    return ccshim__fail(CCSHIM_EINVAL, "ccshim_lookup: an argument is NULL");
  char canonical[64];
  ccshim_canonical_platform(platform, canonical, sizeof canonical);
  pthread_mutex_lock(&registry_mu);
  entry* e = find(name, canonical);
  if (e) *out = e->reg;
  pthread_mutex_unlock(&registry_mu);
  if (e == NULL)
    return ccshim__fail(CCSHIM_ENOENT,
                        "No FFI handler registered for %s on a platform %s "
                        "(canonical %s)",
                        name, platform, canonical);
  return CCSHIM_OK;
}

ccshim_status ccshim_unregister(const char* name, const char* platform) {
  if (name == NULL || platform == NULL)
    return ccshim__fail(CCSHIM_EINVAL, "ccshim_unregister: an argument is NULL");
  char canonical[64];
  ccshim_canonical_platform(platform, canonical, sizeof canonical);
  pthread_mutex_lock(&registry_mu);
  entry* e = find(name, canonical);
  if (e != NULL) {
    free(e->name);
    *e = entries[--num_entries];
  }
  pthread_mutex_unlock(&registry_mu);
  if (e == NULL)
    return ccshim__fail(CCSHIM_ENOENT, "No FFI handler registered for %s on %s", name, canonical);
  return CCSHIM_OK;
}

int ccshim_is_registered_handler(XLA_FFI_Handler* handler) {
  int found = 0;
  pthread_mutex_lock(&registry_mu);
  for (size_t i = 0; i < num_entries && !found; i++) {
    const XLA_FFI_Handler_Bundle* b = &entries[i].reg.bundle;
    found = b->instantiate == handler || b->prepare == handler || b->initialize == handler ||
            b->execute == handler || b->record == handler;
  }
  pthread_mutex_unlock(&registry_mu);
  return handler != NULL && found;
}

/* --- Telling a typed handler from a legacy kernel ---------------------------- */

static int probe_reported; /* in the probing child only */

/* Every function of the probe's API table: records the call back and
 * returns NULL (no error), whatever the function was meant to be; every
 * XLA_FFI_Api function takes one args pointer and returns an error. */
static XLA_FFI_Error* probe_recorder(void* args) {
  (void)args;
  probe_reported = 1;
  return NULL;
}

/* In the child: 't' when the handler answered the metadata query or called
 * back into the API table, 'l' when it returned having done neither.  Every
 * pointer slot of the table past api_version's struct_size holds the
 * recorder (its version numbers aside), so a call back is seen whichever
 * layout the handler was built against: FFI releases from before
 * api_version existed (jaxlib 0.4.30's, say) read Error_Create at offset
 * 24, where 0.4 keeps api_version.extension_start. */
static char probe_answer(void* arg) {
  XLA_FFI_Handler* fn = *(XLA_FFI_Handler**)arg;
  static union {
    XLA_FFI_Api api;
    void* slots[128];
  } table;
  _Static_assert(sizeof(XLA_FFI_Api) <= sizeof table.slots, "the probe table holds the API");
  memcpy(&table.api, ccshim_ffi_api(), sizeof table.api);
  XLA_FFI_Error* (*recorder)(void*) = probe_recorder;
  size_t versions =
      offsetof(XLA_FFI_Api, api_version) + offsetof(XLA_FFI_Api_Version, major_version);
  for (size_t at = 3 * sizeof(void*); at < sizeof table.slots; at += sizeof(void*))
    if (at != versions) memcpy((char*)table.slots + at, &recorder, sizeof recorder);
  ccshim__metadata_call call;
  ccshim__metadata_frame(&table.api, &call);
  /* Called with the frame first and NULL for every other argument a legacy
   * form has (in, buffers, opaque, status): a handler ignores them, and a
   * legacy kernel faults at once on a NULL `in` instead of reading sizes
   * from whatever a register held. */
  typedef void* wide_fn(void*, void*, void*, void*, void*);
  wide_fn* as_wide;
  memcpy(&as_wide, &fn, sizeof fn);
  as_wide(&call.frame, NULL, NULL, NULL, NULL);
  const XLA_FFI_Api_Version* v = &call.metadata.api_version;
  return probe_reported || v->major_version != 0 || v->minor_version != 0 ? 't' : 'l';
}

ccshim_status ccshim_probe_typed_handler(XLA_FFI_Handler* fn, int* typed) {
  if (fn == NULL || typed == NULL)
    return ccshim__fail(CCSHIM_EINVAL, "ccshim_probe_typed_handler: %s is NULL",
                        fn == NULL ? "fn" : "typed");
  *typed = ccshim__ask_child(probe_answer, &fn, 2000, 'l') == 't';
  return CCSHIM_OK;
}
