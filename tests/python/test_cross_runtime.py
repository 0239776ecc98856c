"""The same typed-FFI handlers in jaxlib and in ccshim's embedded runtime:
plain-C handlers written against ccshim's header, and handlers written with
XLA's own C++ bindings (tests/handlers).  Same operands, same attributes,
every kind of attribute included: results must be identical, errors alike."""

import ctypes

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ccshim import runtime
from conftest import skip_unless_built_for_this_jaxlib

# Every attribute kind JAX passes, as Python values (converted the same way
# by jax.ffi.ffi_call and by ccshim.runtime).
ATTRS = {
    "flag": True,
    "count": 7,
    "ratio": -0.375,
    "text": "plain text",
    "été": "a non-ASCII name",
    # NULs survive JAX's str and bytes attributes too (checked with jax 0.10.2).
    "nul_text": "a\0b", "nul_bytes": b"a\0b\xff",
    "i8": np.int8(-8), "i16": np.int16(-16), "i32": np.int32(-32), "i64": np.int64(-64),
    "u8": np.uint8(8), "u16": np.uint16(16), "u32": np.uint32(32), "u64": np.uint64(64),
    "f32": np.float32(0.25), "f64": np.float64(1e-300),
    "a_i8": np.array([-1, 2], np.int8), "a_u8": np.array([0, 255, 0], np.uint8),
    "a_i32": np.array([1, -2, 3], np.int32), "a_i64": np.array([2**40], np.int64),
    "a_u16": np.array([65535], np.uint16), "a_u64": np.array([2**63], np.uint64),
    "a_f32": np.array([0.5, -0.5], np.float32), "a_f64": np.array([3.25], np.float64),
    # One level: jax.ffi.ffi_call cannot hash a dictionary inside a
    # dictionary (jax 0.10); deeper nesting is tested in C (test_frame_builder).
    "dict": {"inner": np.int32(5), "name": "d", "x": 1.5},
}


# 64-bit types for the whole module (conftest.x64).
pytestmark = pytest.mark.usefixtures("x64")


@pytest.fixture(scope="module")
def libs(build_dir):
    c = ctypes.CDLL(str(build_dir / "tests" / "libccshim_test_handlers.so"))
    path = build_dir / "tests" / "libccshim_upstream_handlers.so"
    if not path.exists():
        pytest.skip("the upstream-header handlers were not built (no jaxlib headers)")
    skip_unless_built_for_this_jaxlib()
    up = ctypes.CDLL(str(path))
    return c, up


def address(fn):
    return ctypes.cast(fn, ctypes.c_void_p).value


_registered = set()


def in_jax(name, fn, operands, results, attrs, bundle=None):
    if name not in _registered:
        target = bundle or jax.ffi.pycapsule(fn)
        jax.ffi.register_ffi_target(name, target, platform="cpu")
        _registered.add(name)
    return jax.jit(lambda *ops: jax.ffi.ffi_call(name, results)(*ops, **attrs))(*operands)


def same_bytes(a, b):
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    return [np.asarray(x).tobytes() for x in leaves_a] == \
        [np.asarray(x).tobytes() for x in leaves_b]


@pytest.mark.parametrize("which", ["c_scale", "up_scale"])
def test_scale(libs, which):
    lib = libs[0] if which.startswith("c_") else libs[1]
    fn = getattr(lib, which)
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    out = jax.ShapeDtypeStruct((2, 3), jnp.float32)
    attrs = {"factor": np.float32(2.5)}
    jaxlib_out = in_jax(f"x_{which}", fn, [x], out, attrs)
    ours = runtime.call(address(fn), [x], out, attrs)
    assert same_bytes(jaxlib_out, ours)
    assert np.array_equal(ours, 2.5 * x)


def test_every_attribute_kind_arrives_the_same(libs):
    fn = libs[0].c_attrs_echo
    out = jax.ShapeDtypeStruct((4096,), jnp.uint8)
    jaxlib_out = np.asarray(in_jax("x_c_attrs_echo", fn, [], out, ATTRS))
    ours = runtime.call(address(fn), [], out, ATTRS)
    assert jaxlib_out.tobytes() == ours.tobytes()
    assert ours.any()


def test_upstream_bindings_decode_the_same(libs):
    fn = libs[1].up_attrs
    attrs = {
        "b": True, "i8": np.int8(-8), "i16": np.int16(-1600), "i32": np.int32(-320000),
        "i64": -64000000000, "u8": np.uint8(200), "u16": np.uint16(60000),
        "u32": np.uint32(4000000000), "u64": np.uint64(2**40), "f32": np.float32(0.75),
        "f64": -1e100, "str": "o-p-q", "arr": np.array([10, 20, 30, -5], np.int64),
        "dict": {"inner_str": "hello", "inner_i32": np.int32(99)},
        "color": np.int32(3), "range": {"lo": -7, "hi": 7},
    }
    out = jax.ShapeDtypeStruct((24,), jnp.float64)
    jaxlib_out = in_jax("x_up_attrs", fn, [], out, attrs)
    ours = runtime.call(address(fn), [], out, attrs)
    assert same_bytes(jaxlib_out, ours)
    assert ours[23] == 1 and ours[18] == 3 and ours[14] == 55


def test_remaining_args(libs):
    fn = libs[1].up_sum_all
    ops = [np.arange(3, dtype=np.float32), np.full((2, 2), 0.5, np.float32)]
    out = jax.ShapeDtypeStruct((), jnp.float64)
    assert same_bytes(in_jax("x_up_sum_all", fn, ops, out, {}),
                      runtime.call(address(fn), ops, out, {}))


@pytest.mark.parametrize("which", ["c_fail", "up_fail"])
def test_errors_alike(libs, which):
    lib = libs[0] if which.startswith("c_") else libs[1]
    fn = getattr(lib, which)
    attrs = {"code": 5}
    if which == "c_fail":
        attrs["message"] = "it broke"
    out = jax.ShapeDtypeStruct((), jnp.int32)
    with pytest.raises(Exception) as info:
        jax.block_until_ready(in_jax(f"x_{which}", fn, [], out, attrs))
    with pytest.raises(runtime.HandlerError) as ours:
        runtime.call(address(fn), [], out, attrs)
    assert ours.value.code == "NOT_FOUND"
    assert f"NOT_FOUND: {ours.value.message}" in str(info.value)


def test_state_made_at_instantiate(libs):
    c, up = libs
    out = jax.ShapeDtypeStruct((), jnp.int32)
    # Plain C: the handler registers its State type with each runtime itself.
    bundle = {"instantiate": jax.ffi.pycapsule(c.c_counter_instantiate),
              "execute": jax.ffi.pycapsule(c.c_counter_execute)}
    jax.ffi.register_ffi_target("x_c_counter", bundle, platform="cpu")
    f = jax.jit(lambda: jax.ffi.ffi_call("x_c_counter", out)())
    in_jaxlib = [int(f()) for _ in range(3)]
    ctx = runtime.Context()
    runtime.call(address(c.c_counter_instantiate), [], out, {}, context=ctx,
                 stage=runtime.INSTANTIATE)
    ours = [int(runtime.call(address(c.c_counter_execute), [], out, {}, context=ctx))
            for _ in range(3)]
    assert in_jaxlib == ours == [1, 2, 3]

    # XLA's bindings: State<Counter>, its type registered with each runtime.
    up.up_counter_type_id.restype = ctypes.c_void_p
    up.up_counter_type_info.restype = ctypes.c_void_p
    jax.ffi.register_ffi_type("ccshim.test.UpstreamCounter", {
        "type_id": jax.ffi.pycapsule(up.up_counter_type_id()),
        "type_info": jax.ffi.pycapsule(up.up_counter_type_info())}, platform="cpu")
    from ccshim._native import lib as ccshim_lib
    up.up_register_types.restype = ctypes.c_void_p
    up.up_register_types.argtypes = [ctypes.c_void_p]
    assert up.up_register_types(ccshim_lib.ccshim_ffi_api()) is None
    bundle = {"instantiate": jax.ffi.pycapsule(up.up_counter_instantiate),
              "execute": jax.ffi.pycapsule(up.up_counter_execute)}
    jax.ffi.register_ffi_target("x_up_counter", bundle, platform="cpu")
    attrs = {"start": np.int32(10)}
    g = jax.jit(lambda: jax.ffi.ffi_call("x_up_counter", out)(**attrs))
    in_jaxlib = [int(g()) for _ in range(3)]
    ctx = runtime.Context()
    runtime.call(address(up.up_counter_instantiate), [], out, attrs, context=ctx,
                 stage=runtime.INSTANTIATE)
    ours = [int(runtime.call(address(up.up_counter_execute), [], out, attrs, context=ctx))
            for _ in range(3)]
    assert in_jaxlib == ours == [11, 12, 13]
