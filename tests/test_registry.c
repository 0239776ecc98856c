/*
 * The handler registry under XLA's rules: the metadata query made exactly as
 * XLA makes it, the version range 0.1 .. 0.4, traits OR-ed, platforms
 * canonicalised, same re-registration accepted, a different one refused,
 * and the 0.1-era 84-byte Handler_Register layout read through the table.
 */
#include <string.h>

#include "ccshim/runtime.h"
#include "check.h"

/* What the last metadata query looked like, as a handler saw it. */
static struct {
  int calls;
  size_t frame_size, ext_size, md_size, version_size;
  int ext_type, stage, pre_major, pre_minor;
  const void *api, *ctx, *ext_next;
  int64_t nargs, nrets, nattrs;
} seen;

static int report_major = 0, report_minor = 1;
static XLA_FFI_Handler_Traits report_traits = 0;
static int64_t report_state = 0;

static XLA_FFI_Error* probe(XLA_FFI_CallFrame* f) {
  XLA_FFI_InternalExtension* ext = f->extension_start;
  if (ext == NULL || ext->type != XLA_FFI_Extension_Metadata) return NULL;
  XLA_FFI_Metadata* md = ((XLA_FFI_Metadata_Extension*)ext)->metadata;
  seen.calls++;
  seen.frame_size = f->struct_size;
  seen.ext_size = ext->struct_size;
  seen.ext_type = ext->type;
  seen.ext_next = ext->next;
  seen.md_size = md->struct_size;
  seen.version_size = md->api_version.struct_size;
  seen.pre_major = md->api_version.major_version;
  seen.pre_minor = md->api_version.minor_version;
  seen.api = f->api;
  seen.ctx = f->ctx;
  seen.stage = f->stage;
  seen.nargs = f->args.size;
  seen.nrets = f->rets.size;
  seen.nattrs = f->attrs.size;
  md->api_version.major_version = report_major;
  md->api_version.minor_version = report_minor;
  md->traits = report_traits;
  md->state_type_id.type_id = report_state;
  return NULL;
}

/* A second handler with its own address. */
static XLA_FFI_Error* probe2(XLA_FFI_CallFrame* f) { return probe(f); }

static XLA_FFI_Error* ignores_metadata(XLA_FFI_CallFrame* f) {
  (void)f;
  return NULL;
}

static XLA_FFI_Error* refuses_metadata(XLA_FFI_CallFrame* f) {
  XLA_FFI_Error_Create_Args a = {XLA_FFI_Error_Create_Args_STRUCT_SIZE, NULL, "no metadata for you",
                                 XLA_FFI_Error_Code_PERMISSION_DENIED};
  return f->api->XLA_FFI_Error_Create(&a);
}

static void test_query_as_xla_makes_it(void) {
  memset(&seen, 0, sizeof seen);
  CHECK_OK(ccshim_register_handler("reg.query", "host", probe, 0));
  CHECK_EQ(seen.calls, 1);
  CHECK_EQ(seen.frame_size, 168);
  CHECK_EQ(seen.ext_size, 32);
  CHECK_EQ(seen.ext_type, 1);
  CHECK(seen.ext_next == NULL);
  CHECK_EQ(seen.md_size, 36);
  CHECK_EQ(seen.version_size, 24);
  CHECK_EQ(seen.pre_major, 0); /* reads 0.0 until the handler writes it */
  CHECK_EQ(seen.pre_minor, 0);
  CHECK_PTR_EQ(seen.api, ccshim_ffi_api());
  CHECK(seen.ctx == NULL);
  CHECK_EQ(seen.stage, XLA_FFI_ExecutionStage_EXECUTE);
  CHECK_EQ(seen.nargs, 0);
  CHECK_EQ(seen.nrets, 0);
  CHECK_EQ(seen.nattrs, 0);

  XLA_FFI_Metadata md;
  CHECK_OK(ccshim_query_metadata(probe, &md));
  CHECK_EQ(md.api_version.minor_version, 1);
}

static void test_versions(void) {
  static const struct {
    int major, minor, ok;
  } cases[] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 1},  {0, 4, 1}, {0, 0, 0},
               {0, 5, 0}, {1, 0, 0}, {0, -1, 0}, {-1, 9, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char name[32];
    snprintf(name, sizeof name, "reg.version.%zu", i);
    report_major = cases[i].major;
    report_minor = cases[i].minor;
    ccshim_status st = ccshim_register_handler(name, "cpu", probe, 0);
    if (cases[i].ok) {
      CHECK_OK(st);
    } else {
      CHECK_EQ(st, CCSHIM_EVERSION);
      char want[96];
      snprintf(want, sizeof want, "API version (%d.%d) is incompatible", cases[i].major,
               cases[i].minor);
      CHECK_CONTAINS(ccshim_last_error(), want);
      CHECK_CONTAINS(ccshim_last_error(), "Minimum supported API version is (0.1)");
    }
  }
  report_major = 0;
  report_minor = 1;
  CHECK_STATUS(ccshim_register_handler("reg.silent", "cpu", ignores_metadata, 0), CCSHIM_EVERSION);
  CHECK_CONTAINS(ccshim_last_error(), "(0.0) is incompatible");
  CHECK_STATUS(ccshim_register_handler("reg.refuses", "cpu", refuses_metadata, 0), CCSHIM_EHANDLER);
  CHECK_CONTAINS(ccshim_last_error(), "PERMISSION_DENIED: no metadata for you");
  ccshim_registration r;
  CHECK_STATUS(ccshim_lookup("reg.refuses", "cpu", &r), CCSHIM_ENOENT);
}

static void test_rules(void) {
  report_traits = XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE;
  CHECK_OK(ccshim_register_handler("reg.traits", "CUDA", probe, 0));
  report_traits = 0;
  CHECK_OK(ccshim_register_handler("reg.traits.given", "gpu", probe, 1));
  ccshim_registration r;
  CHECK_OK(ccshim_lookup("reg.traits", "cuda", &r));
  CHECK_EQ(r.traits, 1);
  CHECK_OK(ccshim_lookup("reg.traits.given", "Cuda", &r)); /* gpu -> cuda */
  CHECK_EQ(r.traits, 1);
  CHECK_FN_EQ(r.bundle.execute, probe);
  CHECK_EQ(r.api_minor, 1);

  /* cpu and host are one platform; case is ignored. */
  CHECK_OK(ccshim_register_handler("reg.same", "CPU", probe, 0));
  CHECK_OK(ccshim_lookup("reg.same", "host", &r));
  CHECK_OK(ccshim_register_handler("reg.same", "Host", probe, 0)); /* same again */
  CHECK_STATUS(ccshim_register_handler("reg.same", "host", probe2, 0), CCSHIM_EEXIST);
  CHECK_CONTAINS(ccshim_last_error(), "with different bundle addresses");
  CHECK_STATUS(ccshim_register_handler("reg.same", "host", probe, 1), CCSHIM_EEXIST);
  CHECK_CONTAINS(ccshim_last_error(), "with different metadata");
  /* The same name on another platform is another key. */
  CHECK_OK(ccshim_register_handler("reg.same", "rocm", probe2, 0));

  char canon[16];
  ccshim_canonical_platform("oneAPI", canon, sizeof canon);
  CHECK_STR_EQ(canon, "sycl");
  ccshim_canonical_platform("GPU", canon, sizeof canon);
  CHECK_STR_EQ(canon, "cuda");
  ccshim_canonical_platform("Host", canon, sizeof canon);
  CHECK_STR_EQ(canon, "host");

  XLA_FFI_Handler_Bundle no_execute = {probe, NULL, NULL, NULL, NULL};
  CHECK_STATUS(ccshim_register("reg.noexec", "cpu", &no_execute, 0), CCSHIM_EINVAL);
  CHECK_CONTAINS(ccshim_last_error(), "must provide an execute implementation");
  CHECK_STATUS(ccshim_register(NULL, "cpu", &no_execute, 0), CCSHIM_EINVAL);
  CHECK_STATUS(ccshim_lookup("reg.nothing", "cpu", &r), CCSHIM_ENOENT);
  CHECK_CONTAINS(ccshim_last_error(),
                 "No FFI handler registered for reg.nothing on a platform cpu "
                 "(canonical host)");

  /* The instantiate handler's state type id is recorded. */
  report_state = 4242;
  XLA_FFI_Handler_Bundle stateful = {probe2, NULL, NULL, probe, NULL};
  CHECK_OK(ccshim_register("reg.stateful", "cpu", &stateful, 0));
  report_state = 0;
  CHECK_OK(ccshim_lookup("reg.stateful", "cpu", &r));
  CHECK_EQ(r.state_type_id, 4242);

  CHECK(ccshim_is_registered_handler(probe2));
  CHECK_OK(ccshim_unregister("reg.stateful", "cpu"));
  CHECK_OK(ccshim_unregister("reg.same", "rocm"));
  CHECK(!ccshim_is_registered_handler(probe2));
  CHECK_STATUS(ccshim_unregister("reg.stateful", "cpu"), CCSHIM_ENOENT);
}

/* 0.1-0.3 Handler_Register_Args: the 32-byte bundle, traits at 80. */
typedef struct register_args_v01 {
  size_t struct_size;
  void* extension_start;
  XLA_FFI_ByteSpan name;
  XLA_FFI_ByteSpan platform;
  XLA_FFI_Handler* bundle[4];
  XLA_FFI_Handler_Traits traits;
} register_args_v01;

static void test_register_through_table(void) {
  const XLA_FFI_Api* api = ccshim_ffi_api();
  register_args_v01 old;
  memset(&old, 0, sizeof old);
  old.struct_size = CCSHIM_FFI_HANDLER_REGISTER_ARGS_SIZE_V0_1;
  old.name = (XLA_FFI_ByteSpan){"reg.table.v01", 13};
  old.platform = (XLA_FFI_ByteSpan){"cpu", 3};
  old.bundle[3] = probe;
  old.traits = 1;
  CHECK_EQ(offsetof(register_args_v01, traits), 80);
  XLA_FFI_Error* e = api->XLA_FFI_Handler_Register((XLA_FFI_Handler_Register_Args*)&old);
  CHECK(e == NULL);
  ccshim_registration r;
  CHECK_OK(ccshim_lookup("reg.table.v01", "host", &r));
  CHECK_FN_EQ(r.bundle.execute, probe);
  CHECK(r.bundle.record == NULL);
  CHECK_EQ(r.traits, 1);

  XLA_FFI_Handler_Register_Args now;
  memset(&now, 0, sizeof now);
  now.struct_size = XLA_FFI_Handler_Register_Args_STRUCT_SIZE;
  now.name = (XLA_FFI_ByteSpan){"reg.table.v04", 13};
  now.platform = (XLA_FFI_ByteSpan){"cpu", 3};
  now.bundle.execute = probe;
  now.bundle.record = probe2;
  CHECK(api->XLA_FFI_Handler_Register(&now) == NULL);
  CHECK_OK(ccshim_lookup("reg.table.v04", "cpu", &r));
  CHECK_FN_EQ(r.bundle.record, probe2);

  /* A version refusal comes back as INVALID_ARGUMENT, as from XLA. */
  report_minor = 9;
  now.name = (XLA_FFI_ByteSpan){"reg.table.bad", 13};
  e = api->XLA_FFI_Handler_Register(&now);
  report_minor = 1;
  CHECK(e != NULL);
  CHECK_EQ(ccshim_error_code(e), XLA_FFI_Error_Code_INVALID_ARGUMENT);
  CHECK_CONTAINS(ccshim_error_message(e), "(0.9) is incompatible");
  ccshim_error_free(e);
  /* A handler's own error is passed on with its code. */
  now.name = (XLA_FFI_ByteSpan){"reg.table.refuses", 17};
  now.bundle.execute = refuses_metadata;
  e = api->XLA_FFI_Handler_Register(&now);
  CHECK(e != NULL);
  CHECK_EQ(ccshim_error_code(e), XLA_FFI_Error_Code_PERMISSION_DENIED);
  ccshim_error_free(e);
  /* A name with a NUL byte cannot be a key. */
  now.name = (XLA_FFI_ByteSpan){"bad\0name", 8};
  now.bundle.execute = probe;
  e = api->XLA_FFI_Handler_Register(&now);
  CHECK(e != NULL);
  CHECK_CONTAINS(ccshim_error_message(e), "contains a NUL byte");
  ccshim_error_free(e);
}

int main(void) {
  test_query_as_xla_makes_it();
  test_versions();
  test_rules();
  test_register_through_table();
  printf("registry: ok\n");
  return 0;
}
