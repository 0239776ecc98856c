# cython: language_level=3
# A seed in Cython (its first byte odd): a capsule helper, its exports, a
# registration by literal, one computed, a call site and a typed call.
from cpython.pycapsule cimport PyCapsule_New

targets = {}

cdef make(fn_name, void* fn):
    targets[fn_name] = PyCapsule_New(fn, "xla._CUSTOM_CALL_TARGET", NULL)

cdef void k(void** out, const void** ins) nogil:
    pass

make("k", <void*>(k))
xla_client.register_custom_call_target(b"k2", capsule, platform="gpu")
xla_client.register_custom_call_target(name_of(k), capsule)
out = custom_call("k", result_types=[t], operands=[x], backend_config=opaque)
typed = ffi_call("k_ffi", shapes)(x)
