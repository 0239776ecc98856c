"""One JAX call site, two paths, the same bytes: for each class of shapes a
legacy call site can have, the kernel run through XLA's own legacy path
(register_xla_legacy / xla_legacy_call) and through ccshim (register_legacy
/ legacy_call) with the same arguments, compared byte for byte and with
NumPy.  The kernels (tests/python/kernels.c) write what they were handed
into their outputs: memory as laid out, NULL and aliasing flags.  The table
these rows prove is docs/shape-classes.md.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ccshim.jax as cj

F32 = jnp.float32


def sds(shape, dtype=F32):
    return jax.ShapeDtypeStruct(shape, dtype)


X34 = np.arange(12, dtype=np.float32).reshape(3, 4)
X12 = np.arange(12, dtype=np.float32)
ONES8 = np.ones(8, np.float32)
IOTA8 = np.arange(8, dtype=np.float32)

# name -> kernel, api version, ccshim signature, results, operands,
#         call-site arguments (the same on both paths), what NumPy says.
CLASSES = {
    "array result": dict(
        kernel="iota4096_v1", api=1, sig="() -> f32[4096]", out=sds((4096,)), ops=[],
        kw={}, want=np.arange(4096, dtype=np.float32) * 0.5),
    # A list of one lowers to a single array: the kernel gets the buffer.
    "result list of one": dict(
        kernel="iota4096_v1", api=1, sig="() -> f32[4096]", out=[sds((4096,))], ops=[],
        kw={}, want=[np.arange(4096, dtype=np.float32) * 0.5]),
    "result list of one, no signature": dict(
        kernel="iota4096_v1", api=1, sig=None, out=[sds((4096,))], ops=[],
        kw={}, want=[np.arange(4096, dtype=np.float32) * 0.5]),
    "column-major operand": dict(
        kernel="copy48_v1", api=1, sig="(f32[3,4]{0,1}) -> f32[12]", out=sds((12,)),
        ops=[X34], kw=dict(input_layouts=[(1, 0)]), want=X34.T.ravel()),
    "column-major result": dict(
        kernel="copy48_v1", api=1, sig="(f32[12]) -> f32[3,4]{0,1}", out=sds((3, 4)),
        ops=[X12], kw=dict(output_layouts=(1, 0)), want=X12.reshape(4, 3).T),
    "zero-size operand and result": dict(
        kernel="zero_size_v2", api=2, sig="(f32[0], f32[4]) -> (f32[0], f32[4])",
        out=[sds((0,)), sds((4,))], ops=[np.zeros(0, np.float32), X12[:4]], kw={},
        want=None),
    "aliased operand and result": dict(
        kernel="accumulate_v1", api=1, sig="(f32[8], f32[8]) -> f32[8]", out=sds((8,)),
        ops=[ONES8, IOTA8], kw=dict(input_output_aliases={0: 0}), want=ONES8 + IOTA8 + 1000),
    "not aliased": dict(
        kernel="accumulate_v1", api=1, sig="(f32[8], f32[8]) -> f32[8]", out=sds((8,)),
        ops=[ONES8, IOTA8], kw={}, want=ONES8 + IOTA8),
    "side effect": dict(
        kernel="accumulate_v1", api=1, sig="(f32[8], f32[8]) -> f32[8]", out=sds((8,)),
        ops=[ONES8, IOTA8], kw=dict(has_side_effect=True), want=ONES8 + IOTA8),
}


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


@pytest.fixture(scope="module")
def registered(kernels):
    names = {}
    for i, (label, c) in enumerate(CLASSES.items()):
        xla, ours = f"fid_xla_{i}", f"fid_ccshim_{i}"
        cj.register_xla_legacy(xla, (kernels, c["kernel"]))
        cj.register_legacy(ours, (kernels, c["kernel"]), api_version=c["api"],
                           signature=c["sig"])
        names[label] = (xla, ours)
    return names


@pytest.mark.parametrize("label", list(CLASSES))
def test_same_bytes_as_xla_legacy_path(registered, label):
    c = CLASSES[label]
    xla, ours = registered[label]
    legacy = jax.jit(cj.xla_legacy_call(xla, c["out"], api_version=c["api"], **c["kw"]))
    typed = jax.jit(cj.legacy_call(ours, c["out"], **c["kw"]))
    a, b = legacy(*c["ops"]), typed(*c["ops"])
    assert isinstance(a, list) == isinstance(b, list) == isinstance(c["out"], list)
    for x, y in zip(_as_list(a), _as_list(b)):
        assert x.shape == y.shape and x.dtype == y.dtype
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes(), label
    if c["want"] is not None:
        for x, w in zip(_as_list(b), _as_list(c["want"])):
            np.testing.assert_array_equal(np.asarray(x), w)


def test_zero_size_buffers_are_handed_over_as_xla_does(registered):
    # What the kernel saw (NULL pointers, aliasing) is in out[1][3]; the rest
    # is 3 * x.  Both paths agree above; here, the values themselves.
    xla, ours = registered["zero-size operand and result"]
    c = CLASSES["zero-size operand and result"]
    got = jax.jit(cj.legacy_call(ours, c["out"]))(*c["ops"])
    np.testing.assert_array_equal(np.asarray(got[1])[:3], 3 * X12[:3])


def test_the_signature_layout_is_used_where_the_call_gives_none(registered, kernels):
    xla, ours = registered["column-major operand"]
    no_layout_given = jax.jit(cj.legacy_call(ours, sds((12,))))(X34)
    np.testing.assert_array_equal(np.asarray(no_layout_given), X34.T.ravel())


def test_a_layout_the_signature_contradicts_is_refused(registered, kernels):
    _, ours = registered["column-major operand"]
    with pytest.raises(ValueError, match=r"input 0: the signature says f32\[3,4\]\{0,1\} "
                                         r"\(layout \{0,1\}.*input_layouts\[0\] is \(0, 1\) "
                                         r"\(major-to-minor, JAX's order\), which is \{1,0\}"):
        cj.legacy_call(ours, sds((12,)), input_layouts=[(0, 1)])(X34)
    # No suffix means row-major, so a column-major call is refused too.
    cj.register_legacy("fid_row_major", (kernels, "copy48_v1"), api_version=1,
                       signature="(f32[3,4]) -> f32[12]")
    with pytest.raises(ValueError, match=r"no layout, which means row-major \{1,0\}"):
        cj.legacy_call("fid_row_major", sds((12,)), input_layouts=[(1, 0)])(X34)


@pytest.mark.parametrize("layout, error, message", [
    ((0, 0), ValueError, r"input_layouts\[0\] is \(0, 0\); expected an order of the 2"),
    ((0,), ValueError, r"expected an order of the 2 dimension\(s\) 0\.\.1"),
    ("ab", TypeError, r"input_layouts\[0\] must be None, a Layout or a sequence"),
    (5, TypeError, r"input_layouts\[0\] must be None, a Layout or a sequence"),
])
def test_malformed_layouts_say_what_was_expected(registered, layout, error, message):
    _, ours = registered["column-major operand"]
    with pytest.raises(error, match=message):
        cj.legacy_call(ours, sds((12,)), input_layouts=[layout])(X34)


def test_layout_lists_say_what_was_expected(registered):
    _, ours = registered["column-major operand"]
    with pytest.raises(TypeError, match="input_layouts must be a sequence of layouts, one per "
                                        "input, or a function of the operands returning one; "
                                        "got int"):
        cj.legacy_call(ours, sds((12,)), input_layouts=5)(X34)
    with pytest.raises(ValueError, match=r"2 input_layouts for 1 input\(s\)"):
        cj.legacy_call(ours, sds((12,)), input_layouts=[None, None])(X34)
    with pytest.raises(TypeError, match="input_layouts must be .* got str"):
        cj.legacy_call(ours, sds((12,)), input_layouts=lambda x: "01")(X34)
    with pytest.raises(ValueError, match=r"2 input_layouts for 1 input\(s\)"):
        cj.legacy_call(ours, sds((12,)), input_layouts=lambda x: [None, None])(X34)


def test_a_result_tuple_of_one_is_refused_with_what_xla_does(kernels):
    with pytest.raises(ValueError, match=r"tuple of one, which no JAX call site makes: XLA "
                                         r"lowers a result list of one to a single array.*"
                                         r"write the result as f32\[4096\]"):
        cj.register_legacy("fid_one_tuple", (kernels, "iota4096_v1"), api_version=1,
                           signature="() -> (f32[4096])")
    with pytest.raises(ValueError, match="nests tuples"):
        cj.register_legacy("fid_nested", (kernels, "iota4096_v1"), api_version=1,
                           signature="() -> ((f32[1], f32[2]), f32[3])")
    with pytest.raises(ValueError, match="tuple_operands='nested' would give the kernel "
                                         "tables of operand pointers"):
        cj.register_legacy("fid_nested_ops", (kernels, "copy48_v1"), api_version=1,
                           signature="((f32[12])) -> f32[12]", tuple_operands="nested")
    assert cj.registered("fid_one_tuple") is None


def test_a_name_is_on_one_path_only(kernels, registered):
    xla, ours = registered["array result"]
    with pytest.raises(ValueError, match="registered through ccshim.*register the legacy "
                                         "side under another name"):
        cj.register_xla_legacy(ours, (kernels, "iota4096_v1"))
    with pytest.raises(ValueError, match="on XLA's legacy path.*register the ccshim side "
                                         "under another name"):
        cj.register_legacy(xla, (kernels, "iota4096_v1"), api_version=1)
    # The same again is the same registration; another kernel is refused.
    assert cj.register_xla_legacy(xla, (kernels, "iota4096_v1"))
    with pytest.raises(ValueError, match="with another kernel"):
        cj.register_xla_legacy(xla, (kernels, "copy48_v1"))


def test_vmap_through_both_paths(registered):
    # ffi_call's own vmap methods, on both paths, from one call site.
    xla, ours = registered["not aliased"]
    a = np.stack([ONES8, 2 * ONES8, 3 * ONES8])
    for method in ("sequential", "broadcast_all"):
        legacy = jax.vmap(cj.xla_legacy_call(xla, sds((8,)), api_version=1,
                                             vmap_method=method), in_axes=(0, None))
        typed = jax.vmap(cj.legacy_call(ours, sds((8,)), vmap_method=method),
                         in_axes=(0, None))
        if method == "broadcast_all":
            # A fixed-size kernel would read one row of a batch: both paths
            # give it the batch; the signature refuses it on ccshim's.
            with pytest.raises(Exception, match="arg 0: expected f32\\[8\\], got f32\\[3,8\\]"):
                jax.jit(typed)(a, IOTA8)
            continue
        x, y = jax.jit(legacy)(a, IOTA8), jax.jit(typed)(a, IOTA8)
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()
        np.testing.assert_array_equal(np.asarray(y), a + IOTA8)


# --- vmap_method="broadcast": the batch's call is described, never guessed ------------

ROWS = np.arange(5 * 16, dtype=np.float32).reshape(5, 16) / 3


def _batch(axis_size, operands, batched):
    """The batch's operands for batched_double_v1: x broadcast to the batch
    and flattened into its rows, the row count multiplied by the batch."""
    n, x = operands
    if not batched[1]:
        x = jnp.broadcast_to(x, (axis_size, *x.shape))
    return [n * axis_size, x]


def _one(name, call):
    # One call site: n rows of 16, the row count an operand.
    def f(x):
        n = np.int32(x.shape[0])
        return call(name, sds(x.shape), vmap_method="broadcast", batch_operands=_batch)(n, x)
    return f


def test_broadcast_without_a_description_is_refused(kernels):
    cj.register_legacy("fid_batched", (kernels, "batched_double_v1"), api_version=1)
    with pytest.raises(ValueError, match="nothing says how that call differs from one row's"):
        jax.vmap(lambda x: cj.legacy_call("fid_batched", sds(x.shape),
                                          vmap_method="broadcast")(np.int32(1), x))(ROWS)
    with pytest.raises(ValueError, match="batch_operands is for vmap_method='broadcast' only"):
        cj.legacy_call("fid_batched", sds((16,)), batch_operands=_batch)
    with pytest.raises(TypeError, match="batch_operands must be a function, got int"):
        cj.legacy_call("fid_batched", sds((16,)), vmap_method="broadcast", batch_operands=3)


def test_broadcast_with_batch_operands_matches_xla_and_numpy(kernels):
    cj.register_legacy("fid_batched2", (kernels, "batched_double_v1"), api_version=1)
    cj.register_xla_legacy("fid_xla_batched", (kernels, "batched_double_v1"))

    def xla(name, out, **kw):
        return cj.xla_legacy_call(name, out, api_version=1, **kw)

    # vmap over rows of one-row calls: the kernel sees all 5 rows at once.
    rows = ROWS.reshape(5, 1, 16)
    ours = jax.jit(jax.vmap(_one("fid_batched2", cj.legacy_call)))(rows)
    theirs = jax.jit(jax.vmap(_one("fid_xla_batched", xla)))(rows)
    np.testing.assert_array_equal(np.asarray(ours), 2 * rows)
    assert np.asarray(ours).tobytes() == np.asarray(theirs).tobytes()
    # Nested vmap: the rule widens an already-batched call again.
    grid = ROWS[:4].reshape(2, 2, 1, 16)
    nested = jax.jit(jax.vmap(jax.vmap(_one("fid_batched2", cj.legacy_call))))(grid)
    np.testing.assert_array_equal(np.asarray(nested), 2 * grid)
