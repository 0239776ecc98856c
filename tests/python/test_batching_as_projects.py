"""Batching as the projects batched: one call over the whole batch, with the
layouts they gave, through one registration that serves the unbatched call
and every batch with its checks kept (a signature with leading dims,
``f32[...b,m,n]{0,1}``).

* jaxlib 0.4.30's LAPACK kernels (getrf, potrf, geqrf): jax.lax.linalg's
  batching rules gave them the whole batch in one call, its size as the
  ``b`` operand and the matrices column-major inside row-major batch dims
  (``{1,2,0}`` for one batch dim; jaxlib/lapack.py).  Here one row's call
  site goes under ``jax.vmap`` with ``vmap_method="broadcast"``: the batch's
  call is the same on XLA's legacy path and through ccshim, byte for byte,
  and equals the batched call written as jaxlib 0.4.30 wrote it.
* jaxlib 0.4.23's ``dynamic_ducc_fft`` (its last CPU FFT kernel of its
  own): a flatbuffer descriptor, shape and stride arrays as operands,
  rebuilt for the batched rank as JAX 0.4.23's lowering built them.
* extending-jax's kepler shape (an s64[] element count, then the arrays;
  tests/python/kernels.c's count_triple_v2, since extending-jax is not on
  PyPI): the count recomputed for the batch, its arrays batched.

Each call site gives the layouts its project's lowering wrote for one row,
``[]`` or ``()`` for a scalar, ``(0,)`` for a 1-D operand: only the
buffers whose rank the batch grew gain its dims.

The wheels come from PyPI at set-up (dev/setup.sh, into the per-user cache).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ccshim.jax as cj

S = jax.ShapeDtypeStruct
S32 = np.int32
HLO = {np.float32: "f32", np.float64: "f64", np.complex64: "c64", np.complex128: "c128"}
LETTER = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}

pytestmark = pytest.mark.usefixtures("x64")

# One signature per kernel for every rank: the batch any leading dims, their
# product the b operand, the matrix column-major ({0,1} of its two dims).
SIGNATURES = {
    "getrf": "(b: s32[], m: s32[], n: s32[], a: {t}[...b,m,n]{{0,1}}) -> "
             "({t}[...b,m,n]{{0,1}}, s32[...b,k], s32[...b])",
    "potrf": "(lower: s32[], b: s32[], n: s32[], a: {t}[...b,n,n]{{0,1}}) -> "
             "({t}[...b,n,n]{{0,1}}, s32[...b])",
    "geqrf": "(b: s32[], m: s32[], n: s32[], lwork: s32[], a: {t}[...b,m,n]{{0,1}}) -> "
             "({t}[...b,m,n]{{0,1}}, {t}[...b,k], s32[...b], {t}[...,lwork])",
}
COLUMN_MAJOR = (1, 0)  # major-to-minor, as ffi_call takes layouts: HLO's {0,1}


@pytest.fixture(scope="module")
def lapack(old_lapack):
    regs = old_lapack.registrations()
    for dtype, t in LETTER.items():
        for op, sig in SIGNATURES.items():
            cj.register_legacy(f"bat_{t}{op}", regs[f"lapack_{t}{op}"], api_version=2,
                               signature=sig.format(t=HLO[dtype]))
            cj.register_xla_legacy(f"batxla_{t}{op}", regs[f"lapack_{t}{op}"])
    return old_lapack


def _row_site(op, dtype, m, n, lwork=None):
    """One row's call site, as jaxlib 0.4.30 lowered an unbatched call:
    (operands before the matrix, results, and the layouts its lapack.py
    wrote for num_bd = 0: [] for each scalar, the matrix column-major, the
    pivots and tau (0,), info (), geqrf's workspace [0])."""
    k = min(m, n)
    if op == "getrf":
        pre = [S32(1), S32(m), S32(n)]
        outs = [S((m, n), dtype), S((k,), S32), S((), S32)]
        out_layouts = [COLUMN_MAJOR, (0,), ()]
    elif op == "potrf":
        pre = [S32(1), S32(1), S32(n)]  # lower, b, n
        outs = [S((n, n), dtype), S((), S32)]
        out_layouts = [COLUMN_MAJOR, ()]
    else:
        pre = [S32(1), S32(m), S32(n), S32(lwork)]
        outs = [S((m, n), dtype), S((k,), dtype), S((), S32), S((lwork,), dtype)]
        out_layouts = [COLUMN_MAJOR, (0,), (), [0]]
    return pre, outs, [[]] * len(pre) + [COLUMN_MAJOR], out_layouts


def _batch_size_at(op):
    return 1 if op == "potrf" else 0


def _widen(op):
    """batch_operands: the batch's operands, its size operand multiplied by
    the axis (as jax.lax.linalg's batching rule made b the batch's size)."""
    at = _batch_size_at(op)

    def widen(axis_size, operands, batched):
        if any(batched[:-1]):
            raise ValueError("only the matrix is batched in these call sites")
        out = list(operands)
        out[at] = operands[at] * axis_size
        if not batched[-1]:
            out[-1] = jnp.broadcast_to(operands[-1], (axis_size, *operands[-1].shape))
        return out
    return widen


def _both_vmapped(op, dtype, a, lwork=None, widen=None):
    """The row's call site under vmap (one level per batch dim) on XLA's
    legacy path and through ccshim: (XLA's, ccshim's)."""
    m, n = a.shape[-2:]
    pre, outs, in_layouts, out_layouts = _row_site(op, dtype, m, n, lwork)
    t = LETTER[dtype]
    aliases = {len(pre): 0}
    widen = widen or _widen(op)
    xla = cj.xla_legacy_call(f"batxla_{t}{op}", outs, api_version=2, vmap_method="broadcast",
                             batch_operands=widen, input_layouts=in_layouts,
                             output_layouts=out_layouts, input_output_aliases=aliases)
    # the same call site, layouts and all, through ccshim
    ours = cj.legacy_call(f"bat_{t}{op}", outs, vmap_method="broadcast", batch_operands=widen,
                          input_layouts=in_layouts, output_layouts=out_layouts,
                          input_output_aliases=aliases)

    def run(call):
        f = lambda x: call(*pre, x)
        for _ in a.shape[:-2]:
            f = jax.vmap(f)
        return jax.jit(f)

    return run(xla)(a), run(ours)(a), run(ours)


def _as_jaxlib(op, dtype, a, lwork=None):
    """The batched call written as jaxlib 0.4.30's lapack.py wrote it, on
    XLA's legacy path: b the batch's size, its layouts for num_bd batch
    dims (minor-to-major there; major-to-minor here)."""
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    num_bd, k, size = len(batch), min(m, n), S32(np.prod(batch, dtype=int))
    matrix = (num_bd, num_bd + 1) + tuple(range(num_bd - 1, -1, -1))
    vector, info = tuple(range(num_bd, -1, -1)), tuple(range(num_bd - 1, -1, -1))
    m2m = lambda minor_to_major: tuple(reversed(minor_to_major))
    if op == "getrf":
        pre, outs = [size, S32(m), S32(n)], [S(a.shape, dtype), S(batch + (k,), S32),
                                            S(batch, S32)]
        out_layouts = [m2m(matrix), m2m(vector), m2m(info)]
    elif op == "potrf":
        pre, outs = [S32(1), size, S32(n)], [S(a.shape, dtype), S(batch, S32)]
        out_layouts = [m2m(matrix), m2m(info)]
    else:
        pre = [size, S32(m), S32(n), S32(lwork)]
        outs = [S(a.shape, dtype), S(batch + (k,), dtype), S(batch, S32), S((lwork,), dtype)]
        out_layouts = [m2m(matrix), m2m(vector), m2m(info), (0,)]
    call = cj.xla_legacy_call(f"batxla_{LETTER[dtype]}{op}", outs, api_version=2,
                              input_layouts=[None] * len(pre) + [m2m(matrix)],
                              output_layouts=out_layouts, input_output_aliases={len(pre): 0})
    return jax.jit(call)(*pre, a)


def _matrices(seed, shape, dtype, spd=False):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    if spd:
        a = a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])
    return a.astype(dtype)


def _same_bytes(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == y.shape and x.dtype == y.dtype
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()


def _one_call(jitted, a):
    """The lowered program makes one custom call for the whole batch, with
    no loop around it."""
    text = jitted.lower(a).as_text()
    assert text.count("stablehlo.custom_call") == 1 and "stablehlo.while" not in text, text


BATCHES = [(3,), (2, 3)]


@pytest.mark.parametrize("dtype", list(HLO))
@pytest.mark.parametrize("batch", BATCHES, ids=str)
def test_getrf_batched_in_one_call(lapack, dtype, batch):
    from scipy import linalg
    a = _matrices(1, batch + (4, 3), dtype)
    xla, ours, jitted = _both_vmapped("getrf", dtype, a)
    _same_bytes(xla, ours)
    _same_bytes(ours, _as_jaxlib("getrf", dtype, a))
    _one_call(jitted, a)
    flat = np.asarray(ours[0]).reshape(-1, 4, 3)
    for i, x in enumerate(a.reshape(-1, 4, 3)):
        p, l, u = linalg.lu(x)
        tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(np.triu(flat[i])[:3], u, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
@pytest.mark.parametrize("batch", BATCHES, ids=str)
def test_potrf_batched_in_one_call(lapack, dtype, batch):
    a = _matrices(2, batch + (5, 5), dtype, spd=True)
    xla, ours, jitted = _both_vmapped("potrf", dtype, a)
    _same_bytes(xla, ours)
    _same_bytes(ours, _as_jaxlib("potrf", dtype, a))
    _one_call(jitted, a)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    chol = np.linalg.cholesky(a)
    np.testing.assert_allclose(np.tril(np.asarray(ours[0])), chol, rtol=tol, atol=tol)
    assert not np.asarray(ours[1]).any()


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
@pytest.mark.parametrize("batch", BATCHES, ids=str)
def test_geqrf_batched_in_one_call(lapack, dtype, batch):
    from scipy import linalg
    a = _matrices(3, batch + (5, 3), dtype)
    lwork = getattr(lapack, f"lapack_{LETTER[dtype]}geqrf_workspace")(5, 3)
    xla, ours, jitted = _both_vmapped("geqrf", dtype, a, lwork)
    _same_bytes(xla[:3], ours[:3])  # the workspace is scratch
    _same_bytes(ours[:3], _as_jaxlib("geqrf", dtype, a, lwork)[:3])
    _one_call(jitted, a)
    tol = 1e-4 if dtype == np.complex64 else 1e-12
    for i, x in enumerate(a.reshape(-1, 5, 3)):
        (qr, tau), _ = linalg.qr(x, mode="raw")
        np.testing.assert_allclose(np.asarray(ours[0]).reshape(-1, 5, 3)[i], qr, rtol=tol,
                                   atol=tol)
        np.testing.assert_allclose(np.asarray(ours[1]).reshape(-1, 3)[i], tau, rtol=tol,
                                   atol=tol)


@pytest.mark.parametrize("op", list(SIGNATURES))
def test_the_same_registration_serves_the_unbatched_call(lapack, op):
    a = _matrices(4, (4, 4), np.float64, spd=op == "potrf")
    lwork = lapack.lapack_dgeqrf_workspace(4, 4) if op == "geqrf" else None
    pre, outs, in_layouts, out_layouts = _row_site(op, np.float64, 4, 4, lwork)
    call = cj.legacy_call(f"bat_d{op}", outs, input_layouts=in_layouts,
                          output_layouts=out_layouts, input_output_aliases={len(pre): 0})
    ours = jax.jit(call)(*pre, a)
    _same_bytes(ours[:3], _as_jaxlib(op, np.float64, a, lwork)[:3])


def test_a_batch_size_left_as_one_row_is_refused_before_the_kernel(lapack):
    # batch_operands that forgets the batch: XLA's legacy path would factor
    # the first matrix and leave the rest of the batch as it was.
    a = _matrices(5, (3, 4, 4), np.float32)
    keep = lambda axis_size, ops, batched: ops
    with pytest.raises(Exception, match=r"INVALID_ARGUMENT.*arg 3: has 3 in its 1 leading "
                                        r"dim\(s\), but b is 1 \(the value of arg 0\)"):
        jax.block_until_ready(_both_vmapped("getrf", np.float32, a, widen=keep)[1])


def test_a_fixed_rank_signature_keeps_refusing_a_batch(lapack):
    regs = lapack.registrations()
    cj.register_legacy("bat_fixed_sgetrf", regs["lapack_sgetrf"], api_version=2,
                       signature="(s32[], m: s32[], n: s32[], a: f32[m,n]{0,1}) -> "
                                 "(f32[m,n]{0,1}, s32[k], s32[])")
    pre, outs, _, _ = _row_site("getrf", np.float32, 4, 4)
    call = cj.legacy_call("bat_fixed_sgetrf", outs, vmap_method="broadcast",
                          batch_operands=_widen("getrf"), input_output_aliases={3: 0})
    with pytest.raises(ValueError, match=r"operand 3: the signature .* expects f32\[m,n\]\{0,1\}, "
                                         r"got f32\[3,4,4\]"):
        jax.vmap(lambda x: call(*pre, x))(_matrices(6, (3, 4, 4), np.float32))


def test_call_layouts_for_one_row_gain_the_batch_dims_majormost(lapack):
    # Given by the call instead of the signature: the same lifted layouts.
    regs = lapack.registrations()
    cj.register_legacy("bat_nosig_sgetrf", regs["lapack_sgetrf"], api_version=2)
    a = _matrices(7, (2, 3, 4, 4), np.float32)
    pre, outs, in_layouts, out_layouts = _row_site("getrf", np.float32, 4, 4)
    call = cj.legacy_call("bat_nosig_sgetrf", outs, vmap_method="broadcast",
                          batch_operands=_widen("getrf"), input_layouts=in_layouts,
                          output_layouts=out_layouts, input_output_aliases={3: 0})
    ours = jax.jit(jax.vmap(jax.vmap(lambda x: call(*pre, x))))(a)
    _same_bytes(ours, _as_jaxlib("getrf", np.float32, a))
    # As a function of the operands, asked again for the batched shapes.
    seen = []

    def layouts(*avals):
        seen.append(avals[-1].shape)
        nb = avals[-1].ndim - 2
        return [None] * 3 + [tuple(range(nb)) + (nb + 1, nb)]
    call = cj.legacy_call("bat_nosig_sgetrf", outs, vmap_method="broadcast",
                          batch_operands=_widen("getrf"), input_layouts=layouts,
                          output_layouts=lambda *avals: [layouts(*avals)[-1], None, None],
                          input_output_aliases={3: 0})
    ours = jax.jit(jax.vmap(jax.vmap(lambda x: call(*pre, x))))(a)
    _same_bytes(ours, _as_jaxlib("getrf", np.float32, a))
    assert seen[-1] == a.shape
    # A list that does not fit one row is refused, naming the row.
    call = cj.legacy_call("bat_nosig_sgetrf", outs, vmap_method="broadcast",
                          batch_operands=_widen("getrf"), input_layouts=[None] * 3 + [(0, 1, 2)],
                          input_output_aliases={3: 0})
    with pytest.raises(ValueError, match=r"input_layouts\[3\].* is \(0, 1, 2\); expected an "
                                         r"order of the 2 dimension"):
        jax.vmap(lambda x: call(*pre, x))(a[0])


# --- extending-jax's element count under vmap --------------------------------------


@pytest.fixture(scope="module")
def counting(kernels):
    cj.register_legacy("bat_count_triple", kernels.count_triple_v2, api_version=2,
                       signature="(n: s64[], x: f32[...n]) -> f32[...n]")
    cj.register_xla_legacy("batxla_count_triple", kernels.count_triple_v2)


@pytest.mark.parametrize("batch", [(3,), (2, 3)], ids=str)
def test_an_element_count_recomputed_for_the_batch(counting, batch):
    # kepler_jax.py's lowering: operand_layouts=[(), layout], result_layouts
    # =[layout], the size an s64[] of the element count; under vmap the
    # count is the batch's, the scalar stays a scalar and keeps its ().
    def widen(axis_size, operands, batched):
        n, x = operands
        if not batched[1]:
            x = jnp.broadcast_to(x, (axis_size, *x.shape))
        return [n * axis_size, x]

    row = S((8,), np.float32)
    layouts = dict(input_layouts=[(), (0,)], output_layouts=(0,))
    ours = cj.legacy_call("bat_count_triple", row, vmap_method="broadcast",
                          batch_operands=widen, **layouts)
    xla = cj.xla_legacy_call("batxla_count_triple", row, api_version=2,
                             vmap_method="broadcast", batch_operands=widen, **layouts)

    def run(call):
        f = lambda v: call(np.int64(8), v)
        for _ in batch:
            f = jax.vmap(f)
        return jax.jit(f)

    x = np.arange(np.prod(batch) * 8, dtype=np.float32).reshape(*batch, 8)
    got, want = run(ours)(x), run(xla)(x)
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
    np.testing.assert_array_equal(np.asarray(got), 3 * x)
    _one_call(run(ours), x)


def test_batch_operands_that_lower_a_rank_is_refused(counting):
    shrink = lambda axis_size, operands, batched: [operands[0], operands[1][0, 0]]
    call = cj.legacy_call("bat_count_triple", S((8,), np.float32), vmap_method="broadcast",
                          batch_operands=shrink, input_layouts=[(), (0,)])
    with pytest.raises(ValueError, match=r"batch_operands returned operand 1 of rank 0 for one "
                                         r"of rank 1; a batch adds dims in front"):
        jax.vmap(lambda v: call(np.int64(8), v))(np.zeros((3, 8), np.float32))


# --- jaxlib 0.4.23's dynamic_ducc_fft under vmap -----------------------------------

FFT_SIGNATURE = "(u8[l], {t}[...b,n], s32[r], s32[r], s32[r], f64[1]) -> {t}[...b,n]"


@pytest.fixture(scope="module")
def ducc(old_ducc_fft):
    kernel = old_ducc_fft.registrations()["dynamic_ducc_fft"]
    for t in ("c64", "c128"):
        cj.register_legacy(f"bat_fft_{t}", kernel, api_version=2,
                           signature=FFT_SIGNATURE.format(t=t))
    cj.register_xla_legacy("batxla_fft", kernel)
    return old_ducc_fft


def _fft_operands(module, x, forward):
    """The operands JAX 0.4.23's CPU lowering passed for a C2C FFT over the
    last axis of x (jax/_src/lax/fft.py, jaxlib/ducc_fft.py): the
    descriptor, x, its shape and row-major strides as s32, and the scale."""
    shape = np.shape(x)
    ndims = len(shape)
    descriptor = module.dynamic_ducc_fft_descriptor(
        ndims=ndims, is_double=np.dtype(x.dtype) == np.complex128, fft_type=0,
        axes=[ndims - 1], forward=forward)
    strides = np.cumprod((1,) + shape[:0:-1])[::-1].astype(np.int32)
    scale = np.array([1.0 if forward else 1.0 / shape[-1]], np.float64)
    return [np.frombuffer(descriptor, np.uint8), x, np.array(shape, np.int32), strides,
            strides, scale]


def _fft_widen(module, forward):
    def widen(axis_size, operands, batched):
        x = operands[1]
        if not batched[1]:
            x = jnp.broadcast_to(x, (axis_size, *x.shape))
        return _fft_operands(module, x, forward)
    return widen


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("forward", [True, False], ids=["forward", "inverse"])
@pytest.mark.parametrize("batch", [(), (3,), (2, 3)], ids=str)
def test_fft_under_vmap_in_one_call(ducc, dtype, forward, batch):
    rng = np.random.default_rng(8)
    x = (rng.standard_normal(batch + (16,)) + 1j * rng.standard_normal(batch + (16,)))
    x = x.astype(dtype)
    row = S((16,), dtype)
    widen = _fft_widen(ducc, forward)
    t = HLO[dtype]
    # The layouts jaxlib 0.4.23's ducc_fft.py wrote for a rank-1 row: [0]
    # for the descriptor, the shape, the strides and the scale (rebuilt by
    # the batch at rank 1, so kept), row-major for x and the result.
    layouts = dict(input_layouts=[[0], (0,), [0], [0], [0], [0]], output_layouts=(0,))
    ours = cj.legacy_call(f"bat_fft_{t}", row, vmap_method="broadcast", batch_operands=widen,
                          **layouts)
    xla = cj.xla_legacy_call("batxla_fft", row, api_version=2, vmap_method="broadcast",
                             batch_operands=widen, **layouts)

    def run(call):
        f = lambda v: call(*_fft_operands(ducc, v, forward))
        for _ in batch:
            f = jax.vmap(f)
        return jax.jit(f)

    got, want = run(ours)(x), run(xla)(x)
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
    if batch:
        _one_call(run(ours), x)
    ref = np.fft.fft(x.astype(np.complex128)) if forward else np.fft.ifft(x.astype(np.complex128))
    tol = 1e-4 if dtype == np.complex64 else 1e-12
    np.testing.assert_allclose(np.asarray(got), ref, rtol=tol, atol=tol)


def test_fft_shape_array_tied_to_the_buffer(ducc):
    # The real kernel's s32[r] shape operand tied to its buffer's dims (a
    # 2-D batch of rows, one registration for every such shape): a true
    # one gives XLA's legacy bytes, a lying one (rows of 32 for rows of 16,
    # which the kernel would read and write past) is refused before it runs.
    kernel = ducc.registrations()["dynamic_ducc_fft"]
    cj.register_legacy("bat_fft_shape_c64", kernel, api_version=2,
                       signature="(u8[l], c64[shape[0],shape[1]], shape: s32[2], s32[2], s32[2], "
                                 "f64[1]) -> c64[shape[0],shape[1]]")
    x = (np.arange(64) * (1 + 0.5j)).astype(np.complex64).reshape(4, 16)
    row = S(x.shape, np.complex64)
    ops = _fft_operands(ducc, x, True)
    ours = jax.jit(cj.legacy_call("bat_fft_shape_c64", row))(*ops)
    xla = jax.jit(cj.xla_legacy_call("batxla_fft", row, api_version=2))(*ops)
    assert np.asarray(ours).tobytes() == np.asarray(xla).tobytes()
    ops[2] = np.array([4, 32], np.int32)
    with pytest.raises(Exception, match=r"INVALID_ARGUMENT.*arg 1: dim 1 is 16, but shape\[1\] "
                                        r"is 32 \(the value of arg 2\)"):
        jax.block_until_ready(jax.jit(cj.legacy_call("bat_fft_shape_c64", row))(*ops))
