"""Registration in the real runtime: the metadata handshake, version skew
refused by XLA at registration, and bad input answered with Python
exceptions that name the problem while the process keeps running."""

import ctypes

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ccshim
import ccshim.jax as cj
from conftest import runtime_ffi_version

SIG = "(f32[256]) -> f32[256]"
OUT = jax.ShapeDtypeStruct((256,), jnp.float32)


def test_handler_reports_0_1_and_registers(kernels):
    adapter = cj.register_legacy("reg_scale_v2", (kernels, "scale_v2"), api_version=2,
                                 signature=SIG)
    assert adapter.metadata() == ((0, 1), 0)
    x = np.ones(256, np.float32)
    assert np.array_equal(jax.jit(cj.legacy_call("reg_scale_v2", OUT))(x), 2 * x)
    # Registering the same again is accepted and gives the same adapter.
    again = cj.register_legacy("reg_scale_v2", (kernels, "scale_v2"), api_version=2,
                               signature=SIG)
    assert again is adapter


def test_newer_version_than_the_runtime_is_refused_at_registration(kernels):
    major, minor = runtime_ffi_version()
    # The runtime's own version is accepted...
    cj.register_legacy("reg_same_version", (kernels, "scale_v1"), api_version=1,
                       ffi_version=(major, minor))
    # ...one newer is refused by XLA itself, with its own message, now.
    with pytest.raises(Exception) as info:
        cj.register_legacy("reg_newer_version", (kernels, "scale_v1"), api_version=1,
                           ffi_version=(major, minor + 1))
    text = str(info.value)
    assert f"API version ({major}.{minor + 1}) is incompatible" in text
    assert f"framework's API version ({major}.{minor})" in text
    assert "reg_newer_version" in text


def test_traits_reach_xla_through_the_metadata(kernels):
    adapter = cj.register_legacy("reg_traits", (kernels, "scale_v1"), api_version=1,
                                 traits=1)
    assert adapter.metadata() == ((0, 1), 1)


def test_same_name_with_another_kernel_is_refused(kernels):
    cj.register_legacy("reg_twice", (kernels, "scale_v1"), api_version=1)
    with pytest.raises(ValueError, match="already registered for host with a different"):
        cj.register_legacy("reg_twice", (kernels, "scale_v2"), api_version=2)
    with pytest.raises(ValueError, match="already registered"):
        cj.register_legacy("reg_twice", (kernels, "scale_v1"), api_version=1,
                           signature=SIG)


def test_unknown_platform(kernels):
    with pytest.raises(ValueError, match="unknown platform 'tpu'; expected cpu \\(or host\\), cuda \\(or gpu\\) or rocm"):
        cj.register_legacy("reg_tpu", (kernels, "scale_v1"), platform="tpu",
                           api_version=1)


def test_bad_kernels_and_forms(kernels):
    with pytest.raises(ValueError, match="api_version 4 is not a legacy form"):
        cj.register_legacy("reg_v4", (kernels, "scale_v1"), api_version=4)
    null_fn = ctypes.CFUNCTYPE(None)()
    with pytest.raises(ValueError, match="NULL"):
        cj.register_legacy("reg_null", null_fn, api_version=1)
    with pytest.raises(ValueError):  # CPython refuses a NULL capsule itself
        cj.register_legacy("reg_null_capsule", jax.ffi.pycapsule(ctypes.c_void_p(0)),
                           api_version=1)
    with pytest.raises(ValueError, match="no kernel named 'no_such_symbol'"):
        cj.register_legacy("reg_missing", "no_such_symbol", api_version=1)
    with pytest.raises(ValueError, match="has no symbol 'nope'"):
        cj.register_legacy("reg_missing2", (kernels, "nope"), api_version=1)
    with pytest.raises(TypeError, match="a kernel is a PyCapsule"):
        cj.register_legacy("reg_float", 1.5, api_version=1)
    with pytest.raises(ccshim.CcshimError, match=r"^signature column 11: expected ',' or '\)' in a tuple"):
        cj.register_legacy("reg_badsig", (kernels, "scale_v1"), api_version=1,
                           signature="(f32[256] -> f32[256]")


def test_capsule_from_a_legacy_module(kernels):
    # What a legacy extension's registrations() hands out: a named capsule.
    make = ctypes.pythonapi.PyCapsule_New
    make.restype = ctypes.py_object
    make.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    address = ctypes.cast(kernels.scale_v1, ctypes.c_void_p).value
    capsule = make(address, b"xla._CUSTOM_CALL_TARGET", None)
    cj.register_legacy("reg_capsule", capsule, api_version=1, signature=SIG)
    x = np.arange(256, dtype=np.float32)
    assert np.array_equal(jax.jit(cj.legacy_call("reg_capsule", OUT))(x), 2 * x)


def test_call_site_errors_keep_the_process_running(kernels):
    cj.register_legacy("reg_checked", (kernels, "scale_v3"), api_version=3,
                       signature=SIG)
    x = np.ones(256, np.float32)
    with pytest.raises(TypeError, match="opaque must be bytes"):
        cj.legacy_call("reg_checked", OUT, opaque=123)(x)
    with pytest.raises(ValueError, match=r"operand 0: the signature .* expects "
                                         r"f32\[256\], got f32\[128\]"):
        cj.legacy_call("reg_checked", OUT)(np.ones(128, np.float32))
    with pytest.raises(ValueError, match=r"expects f32\[256\], got s32\[256\]"):
        cj.legacy_call("reg_checked", OUT)(np.ones(256, np.int32))
    with pytest.raises(ValueError, match="takes 1 operand"):
        cj.legacy_call("reg_checked", OUT)(x, x)
    with pytest.raises(ValueError, match="result is one array; the call asks for 2 results"):
        cj.legacy_call("reg_checked", [OUT, OUT])(x)
    # A wrong attribute type reaching the adapter itself is XLA's error.
    with pytest.raises(Exception, match="expected a string or a u8/s8 array, got a scalar"):
        jax.jit(lambda v: jax.ffi.ffi_call("reg_checked", OUT)(v, opaque=np.int32(3)))(x)
    # And the process goes on.
    good = np.frombuffer(np.array([2.0], np.float32).tobytes() +
                                       np.array([256], np.int32).tobytes(), np.uint8)
    y = jax.jit(cj.legacy_call("reg_checked", OUT, opaque=good.tobytes()))(x)
    assert np.array_equal(y, 2 * x)


def test_legacy_registry_names(build_dir):
    # Kernels that registered themselves with XLA's macros are found by name.
    ccshim.load_legacy_library(build_dir / "examples" / "libccshim_examples.so")
    assert ("add_v2", "Host") in ccshim.legacy_targets()
    cj.register_legacy("reg_by_name", "add_v2", api_version=2,
                       signature="(f32[128], f32[2048]) -> f32[2048]")
    b = np.arange(128, dtype=np.float32)
    c = np.ones(2048, np.float32)
    out = jax.ShapeDtypeStruct((2048,), jnp.float32)
    y = jax.jit(cj.legacy_call("reg_by_name", out))(b, c)
    assert np.array_equal(y, b[np.arange(2048) % 128] + c)
