/*
 * Wrapping: turns (kernel, form, platform, signature, options) into a plan
 * and binds it to a code address.  Everything a call needs is decided here,
 * once, and stored in one allocation.
 */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "adapter_internal.h"
#include "layout.h"

/* The struct_size of the first versioned ccshim_wrap_options (through
 * allow_wx; `layouts` was appended after): the smallest a caller may pass.
 * Fields appended later are read only when the caller's struct_size covers
 * them. */
#define WRAP_OPTIONS_MIN_SIZE CCSHIM_STRUCT_SIZE(ccshim_wrap_options, allow_wx)

static ccshim_status check_args(ccshim_legacy_fn fn, int api_version, ccshim_platform platform,
                                const ccshim_wrap_options* o) {
  if (fn == NULL) return ccshim__fail(CCSHIM_EINVAL, "wrap: the kernel is NULL");
  if (api_version < 1 || api_version > 3)
    return ccshim__fail(CCSHIM_EINVAL,
                        "wrap: API version %d is not a legacy form; expected 1 "
                        "(original), 2 (status returning) or 3 (status "
                        "returning unified)",
                        api_version);
  if ((int)platform < CCSHIM_PLATFORM_HOST || (int)platform > CCSHIM_PLATFORM_ROCM)
    return ccshim__fail(CCSHIM_EINVAL,
                        "wrap: platform %d; expected host (0), cuda (1) or "
                        "rocm (2)",
                        (int)platform);
  if (o->opaque_attr != NULL && o->opaque_attr[0] == '\0')
    return ccshim__fail(CCSHIM_EINVAL,
                        "wrap: the opaque attribute name is "
                        "empty; expected a name such as \"opaque\"");
  if (o->tuple_operands != CCSHIM_TUPLES_FLAT && o->tuple_operands != CCSHIM_TUPLES_NESTED)
    return ccshim__fail(CCSHIM_EINVAL,
                        "wrap: tuple layout %d; expected flat "
                        "(0) or nested (1)",
                        (int)o->tuple_operands);
  if (o->tuple_operands == CCSHIM_TUPLES_NESTED && platform != CCSHIM_PLATFORM_HOST)
    return ccshim__fail(CCSHIM_EINVAL,
                        "wrap: the nested tuple layout is a CPU "
                        "convention; GPU kernels always get one flat buffers[]");
  if (o->ffi_major < 0 || o->ffi_minor < 0)
    return ccshim__fail(CCSHIM_EINVAL, "wrap: FFI version %d.%d is negative", o->ffi_major,
                        o->ffi_minor);
  if ((int)o->layouts < CCSHIM_LAYOUTS_REFUSE || (int)o->layouts > CCSHIM_LAYOUTS_CALLER_CHECKS)
    return ccshim__fail(CCSHIM_EINVAL,
                        "wrap: layout policy %d; expected refuse (0) or caller checks (1)",
                        (int)o->layouts);
  if ((int)o->entry < CCSHIM_ENTRY_AUTO || (int)o->entry > CCSHIM_ENTRY_CLOSURE)
    return ccshim__fail(CCSHIM_EINVAL,
                        "wrap: entry kind %d; expected auto (0), "
                        "prebuilt (1) or closure (2)",
                        (int)o->entry);
  return CCSHIM_OK;
}

/* A layout the adapter could not check is refused, naming the first. */
static ccshim_status refuse_layouts(const ccshim_signature* sig) {
  for (size_t side = 0; side < 2; side++) {
    size_t n = side ? sig->num_ret_leaves : sig->num_arg_leaves;
    const ccshim_shape* const* leaves = side ? sig->ret_leaves : sig->arg_leaves;
    for (size_t i = 0; i < n; i++) {
      if (ccshim_shape_is_row_major(leaves[i])) continue;
      char shape[256];
      ccshim_shape_format(leaves[i], shape, sizeof shape);
      return ccshim__fail(CCSHIM_EUNSUPPORTED,
                          "wrap: %s %zu is %s, not row-major: a typed-FFI buffer carries no "
                          "layout, so the adapter cannot check it; set "
                          "ccshim_wrap_options.layouts = CCSHIM_LAYOUTS_CALLER_CHECKS where the "
                          "caller makes each call with these layouts (ccshim.jax does)",
                          side ? "result" : "operand", i, shape);
    }
  }
  return CCSHIM_OK;
}

/* Bump allocation inside the adapter's single block. */
static void* carve(unsigned char** at, size_t size, size_t align) {
  uintptr_t p = ((uintptr_t)*at + align - 1) & ~(uintptr_t)(align - 1);
  *at = (unsigned char*)p + size;
  return (void*)p;
}

ccshim_status ccshim_wrap(ccshim_legacy_fn fn, int api_version, ccshim_platform platform,
                          const char* signature, const ccshim_wrap_options* opts,
                          ccshim_adapter** out) {
  if (out == NULL) return ccshim__fail(CCSHIM_EINVAL, "wrap: out is NULL");
  *out = NULL;
  ccshim_wrap_options o;
  ccshim_status st =
      ccshim__read_options(&o, CCSHIM_WRAP_OPTIONS_STRUCT_SIZE, opts, WRAP_OPTIONS_MIN_SIZE,
                           "ccshim_wrap_options", "CCSHIM_WRAP_OPTIONS_INIT");
  if (st != CCSHIM_OK) return st;
  st = check_args(fn, api_version, platform, &o);
  if (st != CCSHIM_OK) return st;

  ccshim_signature* sig = NULL;
  if (signature != NULL && (st = ccshim_signature_parse(signature, &sig)) != CCSHIM_OK) return st;
  for (size_t v = 0; sig && platform != CCSHIM_PLATFORM_HOST && v < sig->num_dim_names; v++) {
    if (sig->dim_operands[v] < 0) continue;
    st = ccshim__fail(CCSHIM_EUNSUPPORTED,
                      "wrap: dimension '%s' is the value of operand leaf %d, which on a GPU lives "
                      "in device memory and cannot be read before the kernel runs; tie "
                      "dimensions to operand values on CPU only, or name the dimension alone",
                      sig->dim_names[v], (int)sig->dim_operands[v]);
    ccshim_signature_free(sig);
    return st;
  }
  if (sig && o.layouts == CCSHIM_LAYOUTS_REFUSE && (st = refuse_layouts(sig)) != CCSHIM_OK) {
    ccshim_signature_free(sig);
    return st;
  }
  if (o.tuple_operands == CCSHIM_TUPLES_NESTED && sig == NULL)
    return ccshim__fail(CCSHIM_EINVAL,
                        "wrap: the nested tuple layout needs a "
                        "signature, which says where the tuples are");
  if (sig && (sig->num_arg_leaves > CCSHIM_FRAME_MAX_BUFFERS ||
              sig->num_ret_leaves > CCSHIM_FRAME_MAX_BUFFERS)) {
    ccshim_signature_free(sig);
    return ccshim__fail(CCSHIM_EOVERFLOW,
                        "wrap: the signature has more than "
                        "%d buffers on one side",
                        CCSHIM_FRAME_MAX_BUFFERS);
  }

  int32_t* plan = NULL;
  size_t plan_len = 0;
  if (o.tuple_operands == CCSHIM_TUPLES_NESTED &&
      (st = ccshim__nested_plan(sig, &plan, &plan_len)) != CCSHIM_OK) {
    ccshim_signature_free(sig);
    return st;
  }

  const char* oname = o.opaque_attr ? o.opaque_attr : "opaque";
  size_t oname_len = strlen(oname);
  size_t nspecs = sig ? sig->num_arg_leaves + sig->num_ret_leaves : 0;
  size_t ndims = 0;
  for (size_t i = 0; sig && i < sig->num_arg_leaves; i++) ndims += (size_t)sig->arg_leaves[i]->rank;
  for (size_t i = 0; sig && i < sig->num_ret_leaves; i++) ndims += (size_t)sig->ret_leaves[i]->rank;
  size_t sig_len = sig ? ccshim_signature_format(sig, NULL, 0) : 0;
  size_t nnames = sig ? sig->num_dim_names : 0, names_len = 0;
  for (size_t v = 0; v < nnames; v++) names_len += strlen(sig->dim_names[v]) + 1;

  size_t size = sizeof(ccshim_adapter) + nspecs * sizeof(leaf_spec) + ndims * sizeof(int64_t) +
                plan_len * sizeof(int32_t) + oname_len + 1 + (sig ? sig_len + 1 : 0) +
                nnames * (sizeof(char*) + sizeof(int32_t) + sizeof(int64_t)) + names_len +
                7 * alignof(max_align_t);
  ccshim_adapter* a = calloc(1, size);
  if (a == NULL) {
    free(plan);
    ccshim_signature_free(sig);
    return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
  }
  unsigned char* at = (unsigned char*)(a + 1);
  a->fn = fn;
  a->form = (uint8_t)ccshim_legacy_form_of(api_version, platform);
  a->is_gpu = platform != CCSHIM_PLATFORM_HOST;
  a->slot = -1;
  a->footprint = size;
  a->ffi_major = o.ffi_major;
  a->ffi_minor = o.ffi_minor;
  if (o.ffi_major == 0 && o.ffi_minor == 0) a->ffi_minor = 1;
  a->traits = o.traits;
  atomic_init(&a->pinned, 0);

  if (sig) {
    leaf_spec* specs = carve(&at, nspecs * sizeof *specs, alignof(leaf_spec));
    int64_t* dims = carve(&at, ndims * sizeof *dims, alignof(int64_t));
    for (size_t i = 0; i < nspecs; i++) {
      const ccshim_shape* s =
          i < sig->num_arg_leaves ? sig->arg_leaves[i] : sig->ret_leaves[i - sig->num_arg_leaves];
      specs[i].dtype = s->dtype;
      specs[i].rank = (int32_t)s->rank;
      specs[i].lead = s->any_dims;
      specs[i].dims = dims;
      specs[i].count_var = -1;
      for (size_t v = 0; s->elements_name != NULL && v < nnames; v++)
        if (s->elements_name == sig->dim_names[v]) specs[i].count_var = (int32_t)v;
      if (s->rank) memcpy(dims, s->dims, (size_t)s->rank * sizeof *dims);
      for (int64_t d = 0; s->dim_names != NULL && d < s->rank; d++)
        for (size_t v = 0; v < nnames; v++)
          if (s->dim_names[d] == sig->dim_names[v]) dims[d] = -1 - (int64_t)v;
      dims += s->rank;
    }
    if (!sig->is_static) {
      const char** names = carve(&at, nnames * sizeof *names, alignof(char*));
      int32_t* tied = carve(&at, nnames * sizeof *tied, alignof(int32_t));
      int64_t* elements = carve(&at, nnames * sizeof *elements, alignof(int64_t));
      for (size_t v = 0; v < nnames; v++) {
        size_t len = strlen(sig->dim_names[v]) + 1;
        char* copy = carve(&at, len, 1);
        memcpy(copy, sig->dim_names[v], len);
        names[v] = copy;
        tied[v] = sig->dim_operands[v];
        elements[v] = sig->dim_elements[v];
      }
      a->symbolic = 1;
      a->num_dim_names = (int32_t)nnames;
      a->dim_names = names;
      a->dim_operands = tied;
      a->dim_elements = elements;
    }
    a->specs = specs;
    a->count_checked = 1;
    a->num_args = (int32_t)sig->num_arg_leaves;
    a->num_rets = (int32_t)sig->num_ret_leaves;
    a->tuple_result = (uint8_t)sig->result->is_tuple;
    char* text = carve(&at, sig_len + 1, 1);
    ccshim_signature_format(sig, text, sig_len + 1);
    a->signature = text;
  }
  if (plan) {
    int32_t* p = carve(&at, plan_len * sizeof *p, alignof(int32_t));
    memcpy(p, plan, plan_len * sizeof *p);
    a->nested = p;
    a->nested_len = (int32_t)plan_len;
  }
  char* name = carve(&at, oname_len + 1, 1);
  memcpy(name, oname, oname_len + 1);
  a->opaque_name = name;
  a->opaque_name_len = (uint32_t)oname_len;
  free(plan);
  ccshim_signature_free(sig);
  a->call = ccshim__select_call(a);

  if ((st = ccshim__entry_bind(a, o.entry, o.allow_wx)) != CCSHIM_OK) {
    free(a);
    return st;
  }
  if (ccshim__live_add(a) != 0) {
    ccshim__entry_release(a);
    free(a);
    return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
  }
  *out = a;
  return CCSHIM_OK;
}

ccshim_status ccshim_wrap_registered(const char* name, const char* legacy_platform, int api_version,
                                     const char* signature, const ccshim_wrap_options* opts,
                                     ccshim_adapter** out) {
  if (out) *out = NULL;
  if (name == NULL || legacy_platform == NULL)
    return ccshim__fail(CCSHIM_EINVAL, "wrap_registered: %s is NULL",
                        name == NULL ? "name" : "platform");
  ccshim_platform platform;
  ccshim_status st = ccshim_platform_parse(legacy_platform, &platform);
  if (st != CCSHIM_OK) return st;
  ccshim_legacy_fn fn = ccshim_legacy_lookup(name, legacy_platform);
  if (fn == NULL)
    return ccshim__fail(CCSHIM_ENOENT,
                        "wrap_registered: no legacy target '%s' for platform "
                        "'%s' (%zu registered; platform names are "
                        "case-sensitive, e.g. \"Host\", \"CUDA\")",
                        name, legacy_platform, ccshim_legacy_count());
  return ccshim_wrap(fn, api_version, platform, signature, opts, out);
}

XLA_FFI_Handler* ccshim_adapter_handler(const ccshim_adapter* a) { return a ? a->handler : NULL; }

ccshim_entry_kind ccshim_adapter_entry(const ccshim_adapter* a) {
  return a ? a->entry : CCSHIM_ENTRY_AUTO;
}

size_t ccshim_adapter_footprint(const ccshim_adapter* a) { return a ? a->footprint : 0; }

static ccshim_status not_live(const ccshim_adapter* a) {
  return ccshim__fail(CCSHIM_EINVAL,
                      "adapter_free: %p is not a live adapter (freed already, or not made by "
                      "ccshim_wrap)",
                      (const void*)a);
}

ccshim_status ccshim_adapter_free(ccshim_adapter* a) {
  if (a == NULL) return CCSHIM_OK;
  /* Nothing of *a is read before it is known to be live: a second free
   * must not touch freed memory. */
  if (!ccshim__live_has(a)) return not_live(a);
  if (atomic_load(&a->pinned))
    return ccshim__fail(CCSHIM_EBUSY,
                        "adapter_free: the adapter answered the metadata query "
                        "of another runtime, so it is registered with XLA, "
                        "which has no unregister; it must live until the "
                        "process ends");
  if (ccshim_is_registered_handler(a->handler))
    return ccshim__fail(CCSHIM_EBUSY,
                        "adapter_free: the handler is registered in ccshim's "
                        "embedded runtime; ccshim_unregister it first");
  if (!ccshim__live_remove(a)) return not_live(a); /* freed by another thread meanwhile */
  ccshim__entry_release(a);
  free(a);
  return CCSHIM_OK;
}
