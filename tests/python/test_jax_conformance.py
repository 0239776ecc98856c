"""Legacy CPU kernels in real XLA, two ways, under jax.jit:

(a) XLA's own legacy path: register_ffi_target(api_version=0) and
    ffi_call(custom_call_api_version=N, legacy_backend_config=...);
(b) ccshim: the kernel wrapped into a typed-FFI handler, called as an FFI
    call with the opaque as a uint8 array attribute.

Outputs must be byte-identical, and a failing kernel must raise on both paths
with its message.  Then the JAX transformations users put around such calls.
"""

import struct
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

import ccshim.jax as cj

F32 = jnp.float32


def sds(shape, dtype=F32):
    return jax.ShapeDtypeStruct(shape, dtype)


def desc(scale, count):
    """The packed descriptor of scale_v3: 8 bytes, NULs likely."""
    return struct.pack("fi", scale, count)


X256 = np.sin(np.arange(256, dtype=np.float32))
A64 = np.linspace(-1, 1, 64, dtype=np.float32)
B64 = np.cos(np.arange(64, dtype=np.float32))
BINARY = b"\x00bin\x00ary\xff\x00\x7f"

CASES = {
    "scale_v1": dict(api=1, sig="(f32[256]) -> f32[256]", ops=[X256],
                     out=sds((256,)), opaque=b""),
    "scale_v2": dict(api=2, sig="(f32[256]) -> f32[256]", ops=[X256],
                     out=sds((256,)), opaque=b""),
    "scale_v3": dict(api=3, sig="(f32[256]) -> f32[256]", ops=[X256],
                     out=sds((256,)), opaque=desc(-1.5, 256)),
    "sumdiff_v2": dict(api=2, sig="(f32[64], f32[64]) -> (f32[64], f32[64])",
                       ops=[A64, B64], out=[sds((64,)), sds((64,))], opaque=b""),
    "echo_v3": dict(api=3, sig="() -> (u8[64], s64[])", ops=[],
                    out=[sds((64,), jnp.uint8), sds((), jnp.int64)], opaque=BINARY),
}


# 64-bit types for the whole module (conftest.x64).
pytestmark = pytest.mark.usefixtures("x64")


@pytest.fixture(scope="module")
def both(kernels):
    """Every case registered twice: 'xla_<name>' on XLA's legacy path and
    'ccshim_<name>' through ccshim."""
    for name, c in CASES.items():
        cj.register_xla_legacy(f"xla_{name}", (kernels, name))
        cj.register_legacy(f"ccshim_{name}", (kernels, name), api_version=c["api"],
                           signature=c["sig"])
    return CASES


def run_legacy(name, c, opaque=None, ops=None):
    f = cj.xla_legacy_call(f"xla_{name}", c["out"], api_version=c["api"],
                           opaque=c["opaque"] if opaque is None else opaque)
    return jax.jit(f)(*(c["ops"] if ops is None else ops))


def run_ccshim(name, c, opaque=None, ops=None):
    f = cj.legacy_call(f"ccshim_{name}", c["out"],
                       opaque=c["opaque"] if opaque is None else opaque)
    return jax.jit(f)(*(c["ops"] if ops is None else ops))


def as_bytes(tree):
    return [np.asarray(leaf).tobytes() for leaf in jax.tree.leaves(tree)]


@pytest.mark.parametrize("name", list(CASES))
def test_outputs_byte_identical(both, name):
    c = both[name]
    legacy, typed = run_legacy(name, c), run_ccshim(name, c)
    assert as_bytes(typed) == as_bytes(legacy)


def test_values_are_right(both):
    assert np.array_equal(run_ccshim("scale_v2", both["scale_v2"]), 2 * X256)
    y = np.asarray(run_ccshim("scale_v3", both["scale_v3"]))
    assert np.array_equal(y, np.float32(-1.5) * X256)
    # A shorter count writes a prefix (the rest of the buffer is the
    # kernel's to leave, so only the prefix is compared).
    y = np.asarray(run_ccshim("scale_v3", both["scale_v3"], opaque=desc(4.0, 100)))
    assert np.array_equal(y[:100], np.float32(4.0) * X256[:100])
    s, d = run_ccshim("sumdiff_v2", both["sumdiff_v2"])
    assert np.array_equal(s, A64 + B64) and np.array_equal(d, A64 - B64)
    echoed, length = run_ccshim("echo_v3", both["echo_v3"])
    assert int(length) == len(BINARY)
    assert np.asarray(echoed).tobytes()[:len(BINARY)] == BINARY


def failure_message(fn):
    with pytest.raises(Exception) as info:
        jax.block_until_ready(fn())
    return str(info.value)


@pytest.mark.parametrize("name, bad", [
    ("scale_v2", dict(ops=[np.full(256, np.nan, np.float32)])),
    ("scale_v3", dict(opaque=b"\x01\x00\x02")),
])
def test_failures_raise_with_the_kernels_message(both, name, bad):
    c = both[name]
    legacy = failure_message(lambda: run_legacy(name, c, **bad))
    typed = failure_message(lambda: run_ccshim(name, c, **bad))
    want = {"scale_v2": "INTERNAL: scale_v2: NaN in the input",
            "scale_v3": "INTERNAL: scale_v3: expected an 8-byte descriptor"}[name]
    assert want in legacy and want in typed


def test_failure_text_from_opaque(kernels):
    cj.register_xla_legacy("xla_fail_v3", (kernels, "fail_v3"))
    cj.register_legacy("ccshim_fail_v3", (kernels, "fail_v3"), api_version=3)
    out = sds((), jnp.int32)
    text = b"custom failure, with \xc3\xa9 and digits 123"
    legacy = failure_message(lambda: jax.jit(cj.xla_legacy_call(
        "xla_fail_v3", out, api_version=3, opaque=text))())
    typed = failure_message(lambda: jax.jit(cj.legacy_call(
        "ccshim_fail_v3", out, opaque=text))())
    want = "INTERNAL: " + text.decode()
    assert want in legacy and want in typed


# --- Transformations ---------------------------------------------------------------


def test_vmap_sequential(both):
    xs = np.stack([X256 * k for k in range(1, 6)])
    f = cj.legacy_call("ccshim_scale_v2", sds((256,)), vmap_method="sequential")
    ys = jax.jit(jax.vmap(f))(xs)
    legacy = np.stack([np.asarray(run_legacy("scale_v2", both["scale_v2"], ops=[x]))
                       for x in xs])
    assert np.asarray(ys).tobytes() == legacy.tobytes()


def test_vmap_broadcast_recomputes_the_descriptor(kernels):
    # Without a signature, scale_v3 works on any count its descriptor names;
    # the descriptor is a function of the operand, recomputed for the batch.
    cj.register_legacy("ccshim_scale_any", (kernels, "scale_v3"), api_version=3)
    opaque = lambda x: desc(3.0, x.size)  # noqa: E731
    xs = np.arange(6 * 256, dtype=np.float32).reshape(6, 256) / 7

    def one(x):
        return cj.legacy_call("ccshim_scale_any", sds(x.shape), opaque=opaque,
                              vmap_method="broadcast")(x)

    ys = jax.jit(jax.vmap(one))(xs)
    assert np.array_equal(ys, np.float32(3.0) * xs)
    # Nested vmap, and an unbatched operand broadcast to the batch.
    zs = jax.vmap(jax.vmap(one))(xs.reshape(2, 3, 256))
    assert np.array_equal(zs, np.float32(3.0) * xs.reshape(2, 3, 256))
    with pytest.raises(ValueError, match="fixed signature"):
        cj.legacy_call("ccshim_scale_v2", sds((256,)), vmap_method="broadcast")


def test_custom_vjp_gradient_through_legacy_kernels(kernels):
    cj.register_legacy("ccshim_square", (kernels, "square_v2"), api_version=2,
                       signature="(f32[32]) -> f32[32]")
    cj.register_legacy("ccshim_square_grad", (kernels, "square_grad_v2"), api_version=2,
                       signature="(f32[32], f32[32]) -> f32[32]")

    @jax.custom_vjp
    def square(x):
        return cj.legacy_call("ccshim_square", sds((32,)))(x)

    def fwd(x):
        return square(x), x

    def bwd(x, g):
        return (cj.legacy_call("ccshim_square_grad", sds((32,)))(x, g),)

    square.defvjp(fwd, bwd)
    x = np.linspace(-2, 2, 32, dtype=np.float32)
    grad = jax.jit(jax.grad(lambda v: jnp.sum(square(v) * 3.0)))(x)
    assert np.allclose(grad, 6.0 * x)
    assert np.array_equal(jax.jit(square)(x), x * x)


def test_fori_loop_of_ten_thousand_calls(kernels):
    cj.register_legacy("ccshim_incr", (kernels, "incr_v1"), api_version=1,
                       signature="(f32[]) -> f32[]")
    incr = cj.legacy_call("ccshim_incr", sds(()))
    total = jax.jit(lambda v: jax.lax.fori_loop(0, 10_000, lambda i, x: incr(x), v))(
        np.float32(0))
    assert float(total) == 10_000.0


def test_shard_map_over_eight_host_devices(kernels):
    if len(jax.devices("cpu")) < 8:
        pytest.skip("needs XLA_FLAGS=--xla_force_host_platform_device_count=8 "
                    "before JAX starts")
    cj.register_legacy("ccshim_scale_shard", (kernels, "scale_v3"), api_version=3)
    mesh = jax.make_mesh((8,), ("x",))
    x = jax.device_put(np.linspace(0, 1, 8 * 256, dtype=np.float32),
                       jax.sharding.NamedSharding(mesh, P("x")))

    def local(block):
        return cj.legacy_call("ccshim_scale_shard", sds(block.shape),
                              opaque=lambda a: desc(0.5, a.size))(block)

    sharded = jax.jit(jax.shard_map(local, mesh=mesh, in_specs=P("x"),
                                    out_specs=P("x")))(x)
    assert len(sharded.sharding.device_set) == 8
    single = jax.jit(local)(np.asarray(x))
    assert np.asarray(sharded).tobytes() == np.asarray(single).tobytes()
    assert np.array_equal(single, np.float32(0.5) * np.asarray(x))


def test_python_threads_call_concurrently(both):
    f = jax.jit(cj.legacy_call("ccshim_scale_v2", sds((256,))))
    errors = []

    def worker(k):
        try:
            for i in range(50):
                x = X256 + np.float32(k * 100 + i)
                if not np.array_equal(f(x), 2 * x):
                    errors.append(f"thread {k} call {i}: wrong result")
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
