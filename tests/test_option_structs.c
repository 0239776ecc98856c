/*
 * Versioned option structs (base.h): struct_size decides what the library
 * reads.  An initialised struct and NULL work; a struct zeroed but never
 * initialised, a struct_size no version ever had, and a newer caller's
 * struct that sets a field this library does not know are refused, each
 * with a message naming the INIT macro; a newer caller's struct whose extra
 * fields are zero is read as this library's struct.
 */
#include <string.h>

#include "ccshim/ccshim.h"
#include "check.h"

static void add_v1(void* out, const void** in) {
  *(float*)out = *(const float*)in[0] + *(const float*)in[1];
}

/* A struct as a caller built against a later ccshim would pass it: this
 * version's fields, then two more. */
typedef struct {
  ccshim_wrap_options known;
  int64_t later_field;
  void* later_pointer;
} newer_wrap_options;

typedef struct {
  ccshim_context_options known;
  int64_t later_field;
} newer_context_options;

/* ccshim_wrap_options as first versioned: through allow_wx, no layouts. */
#define FIRST_WRAP_OPTIONS_SIZE ((size_t)CCSHIM_STRUCT_SIZE(ccshim_wrap_options, allow_wx))

static ccshim_status wrap(const ccshim_wrap_options* o, ccshim_adapter** a) {
  return ccshim_wrap((ccshim_legacy_fn)add_v1, 1, CCSHIM_PLATFORM_HOST, "(f32[], f32[]) -> f32[]",
                     o, a);
}

static void wrap_options(void) {
  ccshim_adapter* a;
  CHECK_OK(wrap(NULL, &a));
  CHECK_OK(ccshim_adapter_free(a));

  ccshim_wrap_options o = CCSHIM_WRAP_OPTIONS_INIT;
  CHECK_EQ(o.struct_size, CCSHIM_WRAP_OPTIONS_STRUCT_SIZE);
  CHECK(o.opaque_attr == NULL && o.entry == CCSHIM_ENTRY_AUTO && o.allow_wx == 0);
  o.entry = CCSHIM_ENTRY_CLOSURE;
  o.allow_wx = 1;
  CHECK_OK(wrap(&o, &a));
  CHECK_EQ(ccshim_adapter_entry(a), CCSHIM_ENTRY_CLOSURE);
  CHECK_OK(ccshim_adapter_free(a));

  ccshim_wrap_options zeroed;
  memset(&zeroed, 0, sizeof zeroed);
  CHECK_STATUS(wrap(&zeroed, &a), CCSHIM_EINVAL);
  CHECK(a == NULL);
  CHECK_CONTAINS(ccshim_last_error(),
                 "ccshim_wrap_options.struct_size is 0: initialise the "
                 "struct with CCSHIM_WRAP_OPTIONS_INIT");

  ccshim_wrap_options small = CCSHIM_WRAP_OPTIONS_INIT;
  small.struct_size = sizeof(size_t) + 1;
  CHECK_STATUS(wrap(&small, &a), CCSHIM_EINVAL);
  char want[160];
  snprintf(want, sizeof want, "ccshim_wrap_options.struct_size is %zu; expected %zu to %d",
           sizeof(size_t) + 1, FIRST_WRAP_OPTIONS_SIZE, CCSHIM_STRUCT_SIZE_MAX);
  CHECK_CONTAINS(ccshim_last_error(), want);

  /* What an unversioned caller's first field (a pointer) reads as. */
  small.struct_size = (size_t)(uintptr_t) "opaque";
  CHECK_STATUS(wrap(&small, &a), CCSHIM_EINVAL);
  CHECK_CONTAINS(ccshim_last_error(), "initialise the struct with CCSHIM_WRAP_OPTIONS_INIT");

  newer_wrap_options newer;
  memset(&newer, 0, sizeof newer);
  newer.known.struct_size = CCSHIM_STRUCT_SIZE(newer_wrap_options, later_pointer);
  newer.known.entry = CCSHIM_ENTRY_PREBUILT;
  CHECK_OK(wrap(&newer.known, &a));
  CHECK_EQ(ccshim_adapter_entry(a), CCSHIM_ENTRY_PREBUILT);
  CHECK_OK(ccshim_adapter_free(a));

  newer.later_pointer = &newer;
  CHECK_STATUS(wrap(&newer.known, &a), CCSHIM_EUNSUPPORTED);
  CHECK(a == NULL);
  snprintf(want, sizeof want, "is set, past the %zu bytes this libccshim",
           (size_t)CCSHIM_WRAP_OPTIONS_STRUCT_SIZE);
  CHECK_CONTAINS(ccshim_last_error(), want);
  CHECK_CONTAINS(ccshim_last_error(), "built against a newer ccshim");
}

/* A caller built against the first versioned struct: the library reads its struct_size bytes only
 * and takes the default for `layouts`, whatever lies past them. */
static void older_caller(void) {
  ccshim_wrap_options o = CCSHIM_WRAP_OPTIONS_INIT;
  o.struct_size = FIRST_WRAP_OPTIONS_SIZE;
  o.entry = CCSHIM_ENTRY_PREBUILT;
  memset(&o.layouts, 0x5a, sizeof o.layouts); /* not the caller's: garbage */
  ccshim_adapter* a;
  CHECK_OK(wrap(&o, &a));
  CHECK_EQ(ccshim_adapter_entry(a), CCSHIM_ENTRY_PREBUILT);
  CHECK_OK(ccshim_adapter_free(a));
  /* layouts read as CCSHIM_LAYOUTS_REFUSE, the default. */
  CHECK_STATUS(ccshim_wrap((ccshim_legacy_fn)add_v1, 1, CCSHIM_PLATFORM_HOST,
                           "(f32[2,2]{0,1}, f32[]) -> f32[]", &o, &a),
               CCSHIM_EUNSUPPORTED);
}

/* Layouts in a signature: refused unless the caller checks them. */
static void layouts(void) {
  const char* column_major = "(f32[2,2]{1,0}, f32[]) -> f32[3,2]{0,1}";
  ccshim_adapter* a;
  CHECK_STATUS(
      ccshim_wrap((ccshim_legacy_fn)add_v1, 1, CCSHIM_PLATFORM_HOST, column_major, NULL, &a),
      CCSHIM_EUNSUPPORTED);
  CHECK_CONTAINS(ccshim_last_error(),
                 "wrap: result 0 is f32[3,2]{0,1}, not row-major: a typed-FFI buffer carries no "
                 "layout, so the adapter cannot check it");
  ccshim_wrap_options o = CCSHIM_WRAP_OPTIONS_INIT;
  o.layouts = CCSHIM_LAYOUTS_CALLER_CHECKS;
  CHECK_OK(ccshim_wrap((ccshim_legacy_fn)add_v1, 1, CCSHIM_PLATFORM_HOST, column_major, &o, &a));
  CHECK_OK(ccshim_adapter_free(a));
  /* Row-major written out is what no layout means. */
  CHECK_OK(ccshim_wrap((ccshim_legacy_fn)add_v1, 1, CCSHIM_PLATFORM_HOST,
                       "(f32[2,2]{1,0}, f32[]{}) -> f32[3]{0}", NULL, &a));
  CHECK_OK(ccshim_adapter_free(a));
  o.layouts = (ccshim_layout_policy)2;
  CHECK_STATUS(ccshim_wrap((ccshim_legacy_fn)add_v1, 1, CCSHIM_PLATFORM_HOST, NULL, &o, &a),
               CCSHIM_EINVAL);
  CHECK_CONTAINS(ccshim_last_error(), "layout policy 2; expected refuse (0) or caller checks (1)");
}

static void context_options(void) {
  ccshim_context* ctx;
  CHECK_OK(ccshim_context_new(NULL, &ctx));
  CHECK_STR_EQ(ccshim_context_platform(ctx), "host");
  ccshim_context_free(ctx);

  ccshim_context_options o = CCSHIM_CONTEXT_OPTIONS_INIT;
  CHECK_EQ(o.struct_size, CCSHIM_CONTEXT_OPTIONS_STRUCT_SIZE);
  o.platform = "rocm";
  CHECK_OK(ccshim_context_new(&o, &ctx));
  CHECK_STR_EQ(ccshim_context_platform(ctx), "rocm");
  ccshim_context_free(ctx);

  o.struct_size = 0;
  CHECK_STATUS(ccshim_context_new(&o, &ctx), CCSHIM_EINVAL);
  CHECK(ctx == NULL);
  CHECK_CONTAINS(ccshim_last_error(),
                 "ccshim_context_options.struct_size is 0: initialise "
                 "the struct with CCSHIM_CONTEXT_OPTIONS_INIT");
  o.struct_size = CCSHIM_STRUCT_SIZE_MAX + 1;
  CHECK_STATUS(ccshim_context_new(&o, &ctx), CCSHIM_EINVAL);

  newer_context_options newer;
  memset(&newer, 0, sizeof newer);
  newer.known.struct_size = sizeof newer;
  newer.known.platform = "cuda";
  CHECK_OK(ccshim_context_new(&newer.known, &ctx));
  CHECK_STR_EQ(ccshim_context_platform(ctx), "cuda");
  ccshim_context_free(ctx);
  newer.later_field = -1;
  CHECK_STATUS(ccshim_context_new(&newer.known, &ctx), CCSHIM_EUNSUPPORTED);
  CHECK_CONTAINS(ccshim_last_error(), "ccshim_context_options: byte");
}

int ccshim_test_cxx_init_ok(void); /* option_structs_cc.cc */

int main(void) {
  CHECK(ccshim_test_cxx_init_ok());
  wrap_options();
  older_caller();
  layouts();
  context_options();
  printf("option structs: wrap 7 cases, an older caller 2, layouts 4, context 6\n");
  return 0;
}
