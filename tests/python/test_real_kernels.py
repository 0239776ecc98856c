"""Real public legacy kernels, unchanged, from two projects' wheels on PyPI
(both Apache-2.0, fetched by dev/setup.sh into the per-user cache, never committed),
each registered from its own registrations() mapping and called exactly as
the project's lowering called it, through XLA's own legacy path and through
ccshim: byte for byte between the two paths, and against an independent
reference.

* jaxlib 0.4.30's CPU LAPACK capsules (jaxlib/lapack.py: sizes and flags as
  s32 operands, column-major layouts, the matrix aliased to the first
  result, workspaces as extra results), against SciPy.
* jax-finufft 0.1.0's pybind11 NUFFT kernels (a packed binary descriptor as
  a u8 operand, complex sources, points in reverse order), against the
  non-uniform DFT summed from its definition.
"""

import jax
import numpy as np
import pytest

import ccshim.jax as cj

S = jax.ShapeDtypeStruct
S32 = np.int32
TYPES = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}


# 64-bit types for the whole module (conftest.x64).
pytestmark = pytest.mark.usefixtures("x64")


@pytest.fixture(scope="module")
def lapack(old_lapack):
    """Every legacy entry registered through ccshim ("real_" + name) from the
    module's own registrations(), and the ones these tests call on XLA's
    legacy path too ("realxla_" + name)."""
    regs = old_lapack.registrations()
    ours = cj.register_legacy(regs, api_version=2, prefix="real_")
    for t in TYPES.values():
        for op in ("getrf", "potrf", "geqrf"):
            cj.register_xla_legacy(f"realxla_lapack_{t}{op}", regs[f"lapack_{t}{op}"])
    return old_lapack, regs, ours


def _m2m(minor_to_major):
    """HLO's minor-to-major layout as ffi_call's major-to-minor."""
    return tuple(reversed(tuple(minor_to_major)))


def _layouts(num_bd):
    """jaxlib 0.4.30's layouts: the matrix column-major inside row-major
    batch dims, vectors and info row-major."""
    matrix = (num_bd, num_bd + 1) + tuple(range(num_bd - 1, -1, -1))
    return matrix, tuple(range(num_bd, -1, -1)), tuple(range(num_bd - 1, -1, -1))


def _both(op, dtype, outs, operands, **kw):
    """The same call site on both paths; returns (XLA's, ccshim's)."""
    name = f"lapack_{TYPES[dtype]}{op}"
    xla = jax.jit(cj.xla_legacy_call(f"realxla_{name}", outs, api_version=2, **kw))
    ours = jax.jit(cj.legacy_call(f"real_{name}", outs, **kw))
    return xla(*operands), ours(*operands)


def _same_bytes(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == y.shape and x.dtype == y.dtype
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()


def _matrix(rng, shape, dtype):
    a = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def getrf(dtype, a):
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    matrix, vector, info = _layouts(len(batch))
    outs = [S(a.shape, dtype), S(batch + (min(m, n),), S32), S(batch, S32)]
    ops = [S32(np.prod(batch, dtype=int)), S32(m), S32(n), a]
    return _both("getrf", dtype, outs, ops, input_layouts=[(), (), (), _m2m(matrix)],
                 output_layouts=[_m2m(matrix), _m2m(vector), _m2m(info)],
                 input_output_aliases={3: 0})


def test_registrations_mapping_takes_the_legacy_entries(lapack):
    module, regs, ours = lapack
    legacy = sorted(n for n in regs if not n.endswith("_ffi"))
    assert sorted(ours) == legacy and len(legacy) == 44
    # jaxlib 0.4.30 mixes its first typed-FFI kernels in, same capsule name.
    assert sorted(ours.typed) == ["lapack_cpotrf_ffi", "lapack_dpotrf_ffi",
                                  "lapack_spotrf_ffi", "lapack_zpotrf_ffi"]
    assert cj.registered("real_lapack_spotrf_ffi") is None
    with pytest.raises(ValueError, match="'lapack_spotrf_ffi' is a typed-FFI entry of "
                                         "registrations\\(\\), not a legacy kernel"):
        cj.register_legacy(regs, api_version={"lapack_spotrf_ffi": 2}, prefix="real2_")
    with pytest.raises(ValueError, match="no api_version for the legacy entry"):
        cj.register_legacy(regs, prefix="real3_")


@pytest.mark.parametrize("dtype", list(TYPES))
@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 5), (2, 3, 4)], ids=str)
def test_getrf_matches_xla_and_scipy(lapack, dtype, shape):
    scipy_linalg = pytest.importorskip("scipy.linalg")
    a = _matrix(np.random.default_rng(7), shape, dtype)
    xla, ours = getrf(dtype, a)
    _same_bytes(xla, ours)
    lu, ipiv, info = (np.asarray(x) for x in ours)
    for i in np.ndindex(*shape[:-2]):
        want_lu, want_piv = scipy_linalg.lu_factor(a[i])
        np.testing.assert_allclose(lu[i], want_lu, rtol=1e-5 if a.real.itemsize == 4 else 1e-12)
        np.testing.assert_array_equal(ipiv[i], want_piv + 1)  # LAPACK counts from 1
        assert info[i] == 0


def test_getrf_reports_a_singular_matrix_in_info(lapack):
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    xla, ours = getrf(np.float64, a)
    _same_bytes(xla, ours)
    assert int(ours[2]) == 2  # U(2,2) is exactly zero


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
@pytest.mark.parametrize("lower", [False, True])
def test_potrf_flag_operand_matches_xla_and_scipy(lapack, dtype, lower):
    scipy_linalg = pytest.importorskip("scipy.linalg")
    rng = np.random.default_rng(3)
    x = _matrix(rng, (3, 5, 5), dtype)
    a = (x @ np.conj(np.swapaxes(x, -1, -2)) + 5 * np.eye(5)).astype(dtype)
    matrix, _, info = _layouts(1)
    outs = [S(a.shape, dtype), S((3,), S32)]
    xla, ours = _both("potrf", dtype, outs, [S32(lower), S32(3), S32(5), a],
                      input_layouts=[(), (), (), _m2m(matrix)],
                      output_layouts=[_m2m(matrix), _m2m(info)], input_output_aliases={3: 0})
    _same_bytes(xla, ours)
    factor = np.asarray(ours[0])
    tri = np.tril if lower else np.triu
    for i in range(3):
        want = scipy_linalg.cholesky(a[i], lower=lower)
        np.testing.assert_allclose(tri(factor[i]), want, rtol=1e-4, atol=1e-5)
    assert not np.asarray(ours[1]).any()


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_geqrf_with_workspace_result_matches_xla_and_scipy(lapack, dtype):
    scipy_linalg = pytest.importorskip("scipy.linalg")
    module = lapack[0]
    a = _matrix(np.random.default_rng(5), (2, 6, 4), dtype)
    m, n = 6, 4
    lwork = getattr(module, f"lapack_{TYPES[dtype]}geqrf_workspace")(m, n)
    matrix, vector, info = _layouts(1)
    outs = [S(a.shape, dtype), S((2, min(m, n)), dtype), S((2,), S32), S((lwork,), dtype)]
    xla, ours = _both("geqrf", dtype, outs, [S32(2), S32(m), S32(n), S32(lwork), a],
                      input_layouts=[(), (), (), (), _m2m(matrix)],
                      output_layouts=[_m2m(matrix), _m2m(vector), _m2m(info), (0,)],
                      input_output_aliases={4: 0})
    # The workspace is scratch: LAPACK leaves what it likes there.
    _same_bytes(xla[:3], ours[:3])
    for i in range(2):
        (qr, tau), _ = scipy_linalg.qr(a[i], mode="raw")
        tol = 1e-4 if dtype == np.complex64 else 1e-12
        np.testing.assert_allclose(np.asarray(ours[0])[i], qr, rtol=tol, atol=tol)
        np.testing.assert_allclose(np.asarray(ours[1])[i], tau, rtol=tol, atol=tol)


def test_getrf_under_vmap_on_both_paths(lapack):
    # vmap of a whole jaxlib-style call site, sequentially, on both paths.
    a = _matrix(np.random.default_rng(11), (3, 4, 4), np.float32)
    matrix, vector, info = _layouts(0)
    outs = [S((4, 4), np.float32), S((4,), S32), S((), S32)]
    kw = dict(input_layouts=[(), (), (), _m2m(matrix)],
              output_layouts=[_m2m(matrix), _m2m(vector), _m2m(info)],
              input_output_aliases={3: 0}, vmap_method="sequential")
    xla = jax.vmap(lambda x: cj.xla_legacy_call("realxla_lapack_sgetrf", outs, api_version=2,
                                                **kw)(S32(1), S32(4), S32(4), x))
    ours = jax.vmap(lambda x: cj.legacy_call("real_lapack_sgetrf", outs, **kw)(
        S32(1), S32(4), S32(4), x))
    _same_bytes(jax.jit(xla)(a), jax.jit(ours)(a))
    direct = getrf(np.float32, a)[1]
    _same_bytes(jax.jit(ours)(a), direct)


def test_new_jaxlib_registrations_shape(lapack):
    # The running jaxlib's own mapping, {platform: [(name, capsule, api_version)]}:
    # in 0.10.2 every entry is typed; releases up to 0.5 still had legacy ones.
    from jaxlib import lapack as new_lapack
    new = new_lapack.registrations()
    got = cj.register_legacy(new, api_version=2, prefix="new_")
    assert sorted(got) == sorted(name for name, _, version in new["cpu"] if version == 0)
    assert sorted(got.typed) == sorted(name for name, _, version in new["cpu"] if version == 1)
    # The old kernels in that shape, built as jaxlib >= 0.4.31 builds it: the
    # same entries chosen, the same adapters (registering again is a no-op).
    _, regs, ours = lapack
    shaped = {"cpu": [(n, v, int(n.endswith("_ffi"))) for n, v in regs.items()]}
    again = cj.register_legacy(shaped, api_version=2, prefix="real_")
    assert again == ours and sorted(again.typed) == sorted(ours.typed)
    with pytest.raises(ValueError, match=r"has api_version 'x'; expected 0 \(legacy\) or 1"):
        cj.register_legacy({"cpu": [("a", regs["lapack_sgetrf"], "x")]}, api_version=2)
    assert not cj.register_legacy(shaped, api_version=2, platform="cuda", prefix="real_")


# --- jax-finufft 0.1.0: pybind11 NUFFT kernels, the descriptor a u8 operand --------


def _finufft_descriptor(module, single, n_j, n_modes, iflag=1, eps=1e-6):
    # Opts() defaults of jax_finufft/options.py, as its lowering packed them,
    # but one thread (Opts(nthreads=1)): with OpenMP threads FINUFFT sums in
    # an order that varies from run to run, so two runs of the same path can
    # differ in the last bit, and bytes could not be compared.
    opts = module.FinufftOpts(False, True, 0, 0, False, 1,
                              int(module.FFTW_ESTIMATE), 2, True, True, 0.0, 0, 0, -1, 0)
    n_k = np.zeros(3, np.int64)
    n_k[:len(n_modes)] = n_modes[::-1]  # its backend reads Fortran order
    build = module.build_descriptorf if single else module.build_descriptor
    return np.frombuffer(build(eps, iflag, 1, 1, n_j, *n_k, opts), np.uint8)


@pytest.fixture(scope="module")
def finufft(old_finufft):
    regs = old_finufft.registrations()
    ours = cj.register_legacy(regs, api_version=2, prefix="real_")
    assert sorted(ours) == sorted(regs) and not ours.typed
    for name in ("nufft1d1f", "nufft1d1", "nufft1d2", "nufft2d1f"):
        cj.register_xla_legacy(f"realxla_{name}", regs[name])
    return old_finufft


def _nudft1(c, points, modes, iflag=1):
    """The type-1 sum straight from its definition: f_k = sum_j c_j e^{i k.x_j}."""
    grids = np.meshgrid(*[np.arange(-n // 2, (n + 1) // 2) for n in modes], indexing="ij")
    phase = sum(k[..., None] * x[None] for k, x in zip(grids, points))
    return (c * np.exp(iflag * 1j * phase)).sum(-1)


@pytest.mark.parametrize("single", [True, False], ids=["f32", "f64"])
def test_finufft_type1_matches_xla_and_the_direct_sum(finufft, single):
    real, cplx = (np.float32, np.complex64) if single else (np.float64, np.complex128)
    rng = np.random.default_rng(1)
    n_j, n = 60, 24
    x = rng.uniform(-np.pi, np.pi, (1, n_j)).astype(real)
    c = (rng.standard_normal((1, 1, n_j)) + 1j * rng.standard_normal((1, 1, n_j))).astype(cplx)
    desc = _finufft_descriptor(finufft, single, n_j, [n])
    name = "nufft1d1f" if single else "nufft1d1"
    out = S((1, 1, n), cplx)
    xla = jax.jit(cj.xla_legacy_call(f"realxla_{name}", out, api_version=2))(desc, c, x)
    ours = jax.jit(cj.legacy_call(f"real_{name}", out))(desc, c, x)
    _same_bytes([xla], [ours])
    want = _nudft1(c[0, 0], [x[0]], [n])
    err = np.abs(np.asarray(ours)[0, 0] - want).max() / np.abs(want).max()
    assert err < 1e-5, err


def test_finufft_type2_and_2d_match_xla(finufft):
    rng = np.random.default_rng(2)
    # Type 2 (modes to points), f64: the inverse direction of type 1.
    n_j, n = 40, 16
    x = rng.uniform(-np.pi, np.pi, (1, n_j))
    f = rng.standard_normal((1, 1, n)) + 1j * rng.standard_normal((1, 1, n))
    desc = _finufft_descriptor(finufft, False, n_j, [n])
    out = S((1, 1, n_j), np.complex128)
    xla = jax.jit(cj.xla_legacy_call("realxla_nufft1d2", out, api_version=2))(desc, f, x)
    ours = jax.jit(cj.legacy_call("real_nufft1d2", out))(desc, f, x)
    _same_bytes([xla], [ours])
    # The line `ccshim scan` prints for this target (CPU v1, from the kernel's
    # parameters), pasted: the same bytes.
    cj.register_legacy("scan_nufft1d2", finufft.registrations()["nufft1d2"], platform="cpu",
                       api_version=1)
    _same_bytes([xla], [jax.jit(cj.legacy_call("scan_nufft1d2", out))(desc, f, x)])
    k = np.arange(-n // 2, (n + 1) // 2)
    want = (f[0, 0][:, None] * np.exp(1j * k[:, None] * x[0][None])).sum(0)
    np.testing.assert_allclose(np.asarray(ours)[0, 0], want, rtol=1e-5, atol=1e-5 * abs(want).max())
    # Type 1 in 2-D, f32, points passed in reverse order as its lowering did.
    y = rng.uniform(-np.pi, np.pi, (1, n_j)).astype(np.float32)
    x32 = x.astype(np.float32)
    c = (rng.standard_normal((1, 1, n_j)) + 1j * rng.standard_normal((1, 1, n_j))).astype(
        np.complex64)
    desc = _finufft_descriptor(finufft, True, n_j, [8, 6])
    out = S((1, 1, 8, 6), np.complex64)
    xla = jax.jit(cj.xla_legacy_call("realxla_nufft2d1f", out, api_version=2))(desc, c, y, x32)
    ours = jax.jit(cj.legacy_call("real_nufft2d1f", out))(desc, c, y, x32)
    _same_bytes([xla], [ours])
    want = _nudft1(c[0, 0], [x32[0], y[0]], [8, 6])
    err = np.abs(np.asarray(ours)[0, 0] - want).max() / np.abs(want).max()
    assert err < 1e-4, err


# --- One shape-polymorphic registration for every matrix size --------------------

GETRF_ANY = ("(b: s32[], m: s32[], n: s32[], a: {t}[b,m,n]{{1,2,0}}) -> "
             "({t}[b,m,n]{{1,2,0}}, s32[b,k], s32[b])")


def test_one_registration_serves_every_shape_and_catches_a_lying_size(lapack):
    regs = lapack[1]
    # The sizes jaxlib passed as operands are tied to the matrix's dims; the
    # column-major layout comes from the signature, the call gives none.
    cj.register_legacy("poly_sgetrf", regs["lapack_sgetrf"], api_version=2,
                       signature=GETRF_ANY.format(t="f32"))
    rng = np.random.default_rng(13)
    for shape in [(3, 4, 4), (2, 5, 5), (1, 2, 3)]:
        a = _matrix(rng, shape, np.float32)
        b, m, n = shape
        outs = [S(shape, np.float32), S((b, min(m, n)), S32), S((b,), S32)]
        ours = jax.jit(cj.legacy_call("poly_sgetrf", outs))(S32(b), S32(m), S32(n), a)
        _same_bytes(ours, getrf(np.float32, a)[0])  # XLA's legacy path, as jaxlib called it
    # A lying size operand: m = 5 against 4x4 matrices.  On XLA's legacy path
    # the kernel would read and write past the buffers; here it never runs.
    a = _matrix(rng, (3, 4, 4), np.float32)
    outs = [S((3, 4, 4), np.float32), S((3, 4), S32), S((3,), S32)]
    call = jax.jit(cj.legacy_call("poly_sgetrf", outs))
    with pytest.raises(Exception, match=r"INVALID_ARGUMENT.*arg 3: dim 1 is 4, but m is 5 \(the "
                                        r"value of arg 1\): the size operand and the buffer "
                                        r"disagree"):
        jax.block_until_ready(call(S32(3), S32(5), S32(4), a))
    # Shapes that disagree with each other are caught at trace time.
    bad = [S((3, 4, 4), np.float32), S((2, 4), S32), S((3,), S32)]
    with pytest.raises(ValueError, match=r"result 1: dim 0 is 2, but b is 3 \(dim 0 of operand "
                                         r"3\)"):
        cj.legacy_call("poly_sgetrf", bad)(S32(3), S32(4), S32(4), a)


# --- A typed-FFI handler passed as a legacy kernel --------------------------------


def test_a_typed_capsule_passed_alone_as_legacy_is_refused(lapack):
    # The case: old jaxlib mixes lapack_spotrf_ffi (typed) in with its
    # legacy kernels, same capsule name; wrapped as v2 it would crash.
    regs = lapack[1]
    with pytest.raises(ValueError, match="is a typed-FFI handler, not a legacy kernel: called "
                                         "in a child process with XLA's metadata query"):
        cj.register_legacy("typed_as_legacy", regs["lapack_spotrf_ffi"], api_version=2)
    assert cj.registered("typed_as_legacy") is None
    # The running jaxlib's own typed kernels, too.
    from jaxlib.cpu import _lapack as new_lapack
    with pytest.raises(ValueError, match="is a typed-FFI handler"):
        cj.register_legacy("typed_as_legacy", new_lapack.registrations()["lapack_sgetrf_ffi"],
                           api_version=2)
    # A mapping without jaxlib's marks: the probe still sorts the entries.
    unmarked = {name.replace("_ffi", "_new"): value for name, value in regs.items()
                if name.startswith("lapack_s")}
    got = cj.register_legacy(unmarked, api_version=2, prefix="unmarked_")
    assert got.typed == ["lapack_spotrf_new"]
    assert "lapack_sgetrf" in got and "lapack_spotrf" in got
