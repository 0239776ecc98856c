"""Sizes carried in arrays (issue 20, point 4): a dimension tied to an
element of a small integer array operand (`n[0]` of veros's and mpi4jax's
`s64[1]`/`s32[1]` sizes, `shape[k]` of an FFT's `s32[r]` shape) or to an
element count (`[...n]`, extending-jax's `s64[]` count).  A true size gives
the bytes of XLA's legacy path; a lying one is INVALID_ARGUMENT with both
numbers, before the kernel runs (on XLA's legacy path the kernel reads or
writes past its buffers).

* tests/python/kernels.c: count_sum_v1, shape_rows_v1, count_triple_v2;
* mpi4jax 0.8.1.post2's own mpi_allreduce (its Cython extension as
  dev/setup.sh builds it, on one MPI rank), whose count is an s32[1].
"""


import jax
import numpy as np
import pytest

import ccshim
import ccshim.jax as cj

S = jax.ShapeDtypeStruct
pytestmark = pytest.mark.usefixtures("x64")


def _same_bytes(got, want):
    got, want = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.asarray(g).tobytes() == np.asarray(w).tobytes()


@pytest.fixture(scope="module")
def registered(kernels):
    """Each kernel registered twice: through ccshim with the tying signature,
    and on XLA's legacy path."""
    sigs = {"count_sum_v1": (1, "(n: s64[1], x: f32[...n[0]]) -> f32[]"),
            "shape_rows_v1": (1, "(shape: s32[2], x: f32[shape[0], shape[1]]) -> "
                                 "f32[shape[0], shape[1]]"),
            "count_triple_v2": (2, "(n: s64[], x: f32[...n]) -> f32[...n]")}
    for name, (version, sig) in sigs.items():
        cj.register_legacy(f"sizes_{name}", getattr(kernels, name), api_version=version,
                           signature=sig)
        cj.register_xla_legacy(f"sizes_xla_{name}", getattr(kernels, name))
    return {name: version for name, (version, _) in sigs.items()}


def _both(registered, name, out, *args):
    ours = jax.jit(cj.legacy_call(f"sizes_{name}", out))(*args)
    xla = jax.jit(cj.xla_legacy_call(f"sizes_xla_{name}", out,
                                     api_version=registered[name]))(*args)
    return ours, xla


def test_an_element_of_an_s64_1_array_is_a_size(registered):
    x = np.arange(7, dtype=np.float32)
    ours, xla = _both(registered, "count_sum_v1", S((), np.float32), np.array([7], np.int64), x)
    _same_bytes(ours, xla)
    assert float(ours) == 21.0
    with pytest.raises(Exception, match=r"INVALID_ARGUMENT.*arg 1: has 7 elements, but n\[0\] is "
                                        r"9 \(the value of arg 0\)"):
        jax.block_until_ready(jax.jit(cj.legacy_call("sizes_count_sum_v1", S((), np.float32)))(
            np.array([9], np.int64), x))


def test_a_shape_array_sizes_the_dims(registered):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = S((3, 4), np.float32)
    ours, xla = _both(registered, "shape_rows_v1", out, np.array([3, 4], np.int32), x)
    _same_bytes(ours, xla)
    with pytest.raises(Exception, match=r"INVALID_ARGUMENT.*arg 1: dim 1 is 4, but shape\[1\] is "
                                        r"6 \(the value of arg 0\)"):
        jax.block_until_ready(jax.jit(cj.legacy_call("sizes_shape_rows_v1", out))(
            np.array([3, 6], np.int32), x))


def test_an_element_count_ties_any_dims(registered):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    out = S((2, 3, 4), np.float32)
    ours, xla = _both(registered, "count_triple_v2", out, np.int64(24), x)
    _same_bytes(ours, xla)
    with pytest.raises(Exception, match=r"INVALID_ARGUMENT.*arg 1: has 24 elements, but n is 30 "
                                        r"\(the value of arg 0\)"):
        jax.block_until_ready(jax.jit(cj.legacy_call("sizes_count_triple_v2", out))(
            np.int64(30), x))
    # the result's count must agree too: caught at trace time, between the
    # buffers' shapes (the adapter's run-time check of the same is in C's
    # test_polymorphic)
    with pytest.raises(ValueError, match=r"result 0: its element count is 12, but n is 24 \(the "
                                         r"element count of operand 1\)"):
        jax.jit(cj.legacy_call("sizes_count_triple_v2", S((3, 4), np.float32)))(np.int64(24), x)


@pytest.mark.parametrize("sig, says", [
    ("(n: f32[1], x: f32[n[0]]) -> f32[n[0]]", "is no integer array of fixed dims"),
    ("(n: s32[2], x: f32[n[2]]) -> f32[n[2]]", "has fewer elements"),
    ("(x: f32[m[0]]) -> f32[m[0]]", "is an element of operand 'm', but no operand is named so"),
    ("(n: s32[2], x: f32[n]) -> f32[n]", "or to an element of an integer array as name[k]"),
    ("(n: s32[1], x: f32[n[x]]) -> f32[1]", "an element index after '['"),
])
def test_a_tie_that_cannot_hold_is_refused_at_parse(sig, says):
    with pytest.raises(ValueError, match=says.replace("[", r"\[").replace("(", r"\(")):
        ccshim.Signature(sig)


def test_the_text_round_trips():
    for text in ["(n: s64[1], x: f32[...n[0]]) -> f32[]",
                 "(shape: s32[2], x: f32[shape[0],shape[1]]) -> f32[shape[0],shape[1]]",
                 "(n: s64[], x: f32[...n]) -> f32[...n]"]:
        assert str(ccshim.Signature(text)) == text
        assert str(ccshim.Signature(str(ccshim.Signature(text)))) == text


def test_leading_dims_as_python_reads_them():
    # The C parser's shapes as ccshim.Leaf holds them (any_dims with rank > 0:
    # the dims written after the leading ones), each leaf's text the same as
    # the C side's canonical text of it.
    sig = ccshim.Signature("(b: s32[], a: f32[...b,m,n]{0,1}) -> "
                           "(s32[...b], f32[...,4], f32[...], f32[...n])")
    a = sig.operands[1]
    assert a == ccshim.Leaf("f32", ("m", "n"), (0, 1), "b")
    assert [str(leaf) for leaf in sig.operands + sig.results] == [
        "s32[]", "f32[...b,m,n]{0,1}", "s32[...b]", "f32[...,4]", "f32[...]", "f32[...n]"]
    assert sig.results[0] == ccshim.Leaf("s32", None, None, "b")
    assert sig.results[1] == ccshim.Leaf("f32", (4,), None, "")
    assert sig.results[2].leading == "" and sig.results[2].shape is None
    # jaxlib 0.4.30's batched layouts, from the layout of the trailing dims
    assert [a.layout_for(r) for r in (2, 3, 4)] == [(0, 1), (1, 2, 0), (2, 3, 1, 0)]
    assert sig.results[1].layout_for(3) == (2, 1, 0)


# --- mpi4jax's own kernel ---------------------------------------------------------

def test_mpi4jax_allreduce_count_is_checked(mpi4jax):
    """mpi_allreduce_cpu(void** out, void** in) as mpi4jax lowers it: nitems
    s32[1], the array, then op, comm and dtype handles (u64[1]) and a token
    (not read); its out is a table (the array, then the token's place)."""
    mpi, cpu = mpi4jax
    handle = lambda obj: np.array([mpi._handleof(obj)], np.uint64)  # noqa: E731
    sig = ("(n: s32[1], x: f32[...n[0]], op: u64[1], comm: u64[1], dtype: u64[1]) -> "
           "(f32[...n[0]], u8[0])")
    cj.register_legacy("sizes_mpi_allreduce", cpu.custom_call_targets["mpi_allreduce"],
                       api_version=2, signature=sig)
    cj.register_xla_legacy("sizes_xla_mpi_allreduce", cpu.custom_call_targets["mpi_allreduce"])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = [S((2, 3), np.float32), S((0,), np.uint8)]
    args = (handle(mpi.SUM), handle(mpi.COMM_WORLD), handle(mpi.FLOAT))
    ours = jax.jit(cj.legacy_call("sizes_mpi_allreduce", out, has_side_effect=True))(
        np.array([6], np.int32), x, *args)
    xla = jax.jit(cj.xla_legacy_call("sizes_xla_mpi_allreduce", out, api_version=2,
                                     has_side_effect=True))(np.array([6], np.int32), x, *args)
    _same_bytes(ours, xla)
    np.testing.assert_array_equal(np.asarray(ours[0]), x * mpi.COMM_WORLD.Get_size())
    with pytest.raises(Exception, match=r"INVALID_ARGUMENT.*arg 1: has 6 elements, but n\[0\] is "
                                        r"600 \(the value of arg 0\)"):
        jax.block_until_ready(jax.jit(cj.legacy_call("sizes_mpi_allreduce", out,
                                                     has_side_effect=True))(
            np.array([600], np.int32), x, *args))
