"""The Python package under careless and hostile arguments: every argument
that reaches C is validated at the boundary with a message in the user's
terms, nothing is silently cut (long signatures, NULs, wide integers), and a
failed object makes no noise when it is collected."""

import ctypes
import gc
import sys

import numpy as np
import pytest

import ccshim
import ccshim.jax as cj
import ccshim.runtime as rt

SIG = "(f32[256]) -> f32[256]"


def _long_signature(last: str) -> str:
    # 700 operands: far past the 4095 characters the text was once cut at.
    return "(" + ", ".join(["f32[1]"] * 700) + f") -> {last}"


def test_long_signatures_are_whole_and_distinct():
    a, b = ccshim.Signature(_long_signature("f32[1]")), ccshim.Signature(_long_signature("f32[2]"))
    assert len(a.text) > 4096
    assert a.text.endswith("-> f32[1]") and b.text.endswith("-> f32[2]")
    assert a.text != b.text
    assert len(a.operands) == 700


def test_reregistering_with_another_long_signature_is_refused(kernels):
    cj.register_legacy("hostile_long", (kernels, "scale_v1"), api_version=1,
                       signature=_long_signature("f32[1]"))
    same = cj.register_legacy("hostile_long", (kernels, "scale_v1"), api_version=1,
                              signature=_long_signature("f32[1]"))
    assert same is cj.registered("hostile_long")
    with pytest.raises(ValueError, match="already registered"):
        cj.register_legacy("hostile_long", (kernels, "scale_v1"), api_version=1,
                           signature=_long_signature("f32[2]"))


@pytest.mark.parametrize("call, message", [
    (lambda k: ccshim.Signature("(f32[4]) -> f32[4]\0junk"),
     "signature holds a NUL character at index 18"),
    (lambda k: ccshim.wrap((k, "scale_v1"), api_version=1, opaque_attr="op\0aque"),
     "opaque_attr holds a NUL character at index 2"),
    (lambda k: cj.register_legacy("hostile\0name", (k, "scale_v1"), api_version=1),
     "name holds a NUL character at index 7"),
    (lambda k: ccshim.resolve_kernel("scale_v1\0extra"),
     "a kernel's name holds a NUL character at index 8"),
    (lambda k: rt.Context(platform="cpu\0gpu"), "platform holds a NUL character"),
])
def test_embedded_nul_is_refused(kernels, call, message):
    with pytest.raises(ValueError, match=message):
        call(kernels)


def test_attribute_name_with_nul_is_refused(kernels):
    adapter = ccshim.wrap((kernels, "scale_v3"), api_version=3, signature=SIG)
    x = np.ones(256, np.float32)
    with pytest.raises(ValueError, match="an attribute's name holds a NUL"):
        rt.call(adapter.handler, [x], np.zeros(256, np.float32), {"opa\0que": b"x"})


@pytest.mark.parametrize("kwargs, message", [
    (dict(traits=2**40), r"traits 1099511627776 is out of range; expected 0\.\.4294967295"),
    (dict(traits=-1), r"traits -1 is out of range"),
    (dict(ffi_version=(2**40, 0)), r"ffi_version\[0\] 1099511627776 is out of range"),
    (dict(ffi_version=(0, -1)), r"ffi_version\[1\] -1 is out of range"),
])
def test_integers_are_not_truncated(kernels, kwargs, message):
    with pytest.raises(ValueError, match=message):
        ccshim.wrap((kernels, "scale_v1"), api_version=1, **kwargs)
    with pytest.raises(ValueError, match=message):
        cj.register_legacy("hostile_ints", (kernels, "scale_v1"), api_version=1, **kwargs)


def test_context_threads_are_not_truncated():
    with pytest.raises(ValueError, match=r"num_threads 1099511627776 is out of range"):
        rt.Context(num_threads=2**40)
    with pytest.raises(TypeError, match="num_threads must be int, got float"):
        rt.Context(num_threads=2.0)


def test_addresses_past_a_pointer_are_refused():
    with pytest.raises(ValueError, match=r"kernel address 0x10000000000000000 is not a valid "
                                         r"address; expected 1\.\.0xffffffffffffffff"):
        ccshim.wrap(2**64, api_version=1)
    with pytest.raises(ValueError, match="is not a valid address"):
        ccshim.wrap(-5, api_version=1)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(signature=5), TypeError, "signature must be str or None, got int"),
    (dict(api_version="1"), TypeError, "api_version must be int, got str"),
    (dict(api_version=True), TypeError, "api_version must be int, got bool"),
    (dict(platform=3), TypeError, "platform must be str, got int"),
    (dict(opaque_attr=None), TypeError, "opaque_attr must be str, got NoneType"),
    (dict(opaque_attr=""), ValueError, "opaque_attr is empty"),
    (dict(tuple_operands=1), TypeError, "tuple_operands must be str, got int"),
    (dict(tuple_operands="deep"), ValueError, "tuple_operands 'deep'; expected 'flat' or 'nested'"),
    (dict(ffi_version=1), TypeError, r"ffi_version must be a \(major, minor\) pair"),
    (dict(traits="0"), TypeError, "traits must be int, got str"),
])
def test_wrong_types_and_values_say_which_argument(kernels, kwargs, error, message):
    args = dict(api_version=1)
    args.update(kwargs)
    with pytest.raises(error, match=message):
        ccshim.wrap((kernels, "scale_v1"), **args)
    with pytest.raises(error, match=message):
        cj.register_legacy("hostile_types", (kernels, "scale_v1"), **args)


def test_name_must_be_a_string(kernels):
    with pytest.raises(TypeError, match="name must be str, got int"):
        cj.register_legacy(42, (kernels, "scale_v1"), api_version=1)
    with pytest.raises(TypeError, match="name must be str, got bytes"):
        cj.legacy_call(b"x", np.zeros(1, np.float32))


def test_library_errors_are_not_prefixed_twice(kernels):
    with pytest.raises(ccshim.CcshimError) as info:
        ccshim.wrap((kernels, "scale_v1"), api_version=1, platform="cuda",
                    tuple_operands="nested", signature="((f32[1])) -> f32[1]")
    assert str(info.value).startswith("wrap: the nested tuple layout is a CPU convention")


def _capsule(address: int, name: bytes | None):
    make = ctypes.pythonapi.PyCapsule_New
    make.restype = ctypes.py_object
    make.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return make(address, name, None)


def test_capsule_names(kernels):
    address = ctypes.cast(kernels.scale_v1, ctypes.c_void_p).value
    assert ccshim.resolve_kernel(_capsule(address, b"xla._CUSTOM_CALL_TARGET")) == address
    assert ccshim.resolve_kernel(_capsule(address, None)) == address  # jax.ffi.pycapsule's
    with pytest.raises(ValueError, match=r"the capsule is named 'pybind11_function_record'"
                                         r", which is no custom-call target's name; "
                                         r"accepted: 'xla._CUSTOM_CALL_TARGET'"):
        ccshim.wrap(_capsule(address, b"pybind11_function_record"), api_version=1)


def test_a_failed_context_is_quiet_when_collected():
    seen = []
    old = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        with pytest.raises(ccshim.CcshimError, match="unknown platform 'metal'"):
            rt.Context(platform="metal")
        with pytest.raises(TypeError):
            rt.Context(platform=None)
        gc.collect()
    finally:
        sys.unraisablehook = old
    assert seen == []


def test_a_source_tree_says_where_its_headers_are(tmp_path, monkeypatch):
    # From a source tree (as here) there is no installed include/ or CMake
    # package: the functions say so instead of returning a path that is not.
    with pytest.raises(FileNotFoundError, match="runs from a source tree"):
        ccshim.include_dir()
    with pytest.raises(FileNotFoundError, match="runs from a source tree"):
        ccshim.cmake_dir()
    assert ccshim.library_path().endswith("libccshim.so")


def test_a_bare_library_name_in_the_current_folder_is_that_file(tmp_path, monkeypatch,
                                                                 build_dir):
    import shutil
    shutil.copy(build_dir / "tests" / "libccshim_pytest_kernels.so", tmp_path / "libk_here.so")
    monkeypatch.chdir(tmp_path)
    lib = ccshim.load_legacy_library("libk_here.so")
    assert hasattr(lib, "scale_v1")
    with pytest.raises(OSError):
        ccshim.load_legacy_library("libno_such_library_anywhere.so")


def test_platforms_and_forms_come_from_the_library():
    assert ccshim.parse_platform("GPU") == ("cuda", 1)
    assert ccshim.parse_platform("Host") == ("host", 0)
    assert ccshim.legacy_form_name(3, "cpu") == "CPU v3"
    assert ccshim.legacy_form_name(2, "rocm") == "GPU v2"
    with pytest.raises(ValueError, match=r"unknown platform 'tpu'; expected cpu \(or host\)"):
        ccshim.parse_platform("tpu")
    with pytest.raises(ValueError, match="api_version 4 is out of range"):
        ccshim.legacy_form_name(4, "cpu")


# --- Issue 22: the newer surfaces ------------------------------------------------


def test_a_mapping_with_one_bad_entry_registers_nothing(kernels):
    """XLA has no unregister: a registrations() mapping is checked whole
    before its first entry is registered."""
    good = ccshim.resolve_kernel((kernels, "scale_v1"))
    regs = {"h22_first": jax_capsule(good), "h22_second": jax_capsule(good)}
    with pytest.raises(ValueError, match=r"registrations\(\) entry 'h22_second': api_version 7 "
                                         "is not a legacy form"):
        cj.register_legacy(regs, api_version={"h22_first": 1, "h22_second": 7}, probe=False)
    assert cj.registered("h22_first") is None
    with pytest.raises(ValueError, match=r"registrations\(\) entry 'h22_second': signature "
                                         "column 1"):
        cj.register_legacy(regs, api_version=1, probe=False,
                           signatures={"h22_second": "f32[4] -> f32[4]"})
    assert cj.registered("h22_first") is None
    out = cj.register_legacy(regs, api_version=1, probe=False)
    assert set(out) == {"h22_first", "h22_second"}


def test_an_empty_name_and_a_none_entry_are_refused(kernels):
    with pytest.raises(ValueError, match="name is empty"):
        cj.register_legacy("", (kernels, "scale_v1"), api_version=1)
    with pytest.raises(ValueError, match=r"registrations\(\) entry 'h22_none': expected a name "
                                         "and a kernel, got str and NoneType"):
        cj.register_legacy({"h22_none": None}, api_version=1, probe=False)


def jax_capsule(address):
    import jax
    return jax.ffi.pycapsule(ctypes.cast(address, ctypes.c_void_p).value)


@pytest.mark.parametrize("returned", [None, 3])
def test_batch_operands_returning_no_list_is_named(kernels, returned):
    import jax
    cj.register_legacy("h22_batched", (kernels, "batched_double_v1"), api_version=1)
    call = cj.legacy_call("h22_batched", jax.ShapeDtypeStruct((16,), np.float32),
                          vmap_method="broadcast", batch_operands=lambda *a: returned)
    rows = np.ones((3, 16), np.float32)
    with pytest.raises(TypeError, match=f"h22_batched: batch_operands returned "
                                        f"{type(returned).__name__}; expected a list of the 2"):
        jax.vmap(lambda x: call(np.int32(1), x))(rows)


def test_runtime_call_with_a_shape_for_results_says_what_it_wants(kernels):
    a = ccshim.wrap((kernels, "scale_v1"), api_version=1)
    x = np.ones(4, np.float32)
    with pytest.raises(TypeError, match=r"result_shape_dtypes\[0\] is int \(4\); expected "
                                        "something with .shape and .dtype"):
        rt.call(a.handler, [x, x], (4,))
