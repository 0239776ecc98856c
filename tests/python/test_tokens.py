"""Tokens (issue 20, point 2): what XLA's CPU legacy path hands a kernel for
a token operand and a token result, traced in the real jaxlib, and
legacy_call(..., ordered=True), which passes a token last on both sides
through an ordered effect as mpi4jax's lowerings did (ffi_call passes
none), side by side with XLA's legacy path making the same call.

* tests/python/kernels.c's token_probe_v2 records the pointers it is given
  and the order of its calls;
* mpi4jax 0.8.1.post2's own CPU kernels (its Cython extension as
  dev/setup.sh builds it), called with tokens exactly as its lowerings
  call them, on one MPI rank: equal to XLA's legacy path and to mpi4py.
"""

import ctypes
import sys

import jax
import numpy as np
import pytest

import ccshim.jax as cj
from conftest import MPI4JAX_BUILD, ROOT

S = jax.ShapeDtypeStruct
SIG = "(x: f32[4], token[]) -> (f32[4], token[])"
pytestmark = pytest.mark.usefixtures("x64")


@pytest.fixture(scope="module")
def probe(kernels):
    cj.register_legacy("tok_ours", kernels.token_probe_v2, api_version=2, signature=SIG)
    cj.register_xla_legacy("tok_xla", kernels.token_probe_v2)
    return kernels


def _seen(kernels):
    seen = (ctypes.c_void_p * 2).in_dll(kernels, "token_seen")
    return seen[0], seen[1]


def _order(kernels):
    n = ctypes.c_int.in_dll(kernels, "token_ncalls")
    calls = (ctypes.c_int * 8).in_dll(kernels, "token_calls")
    out = list(calls[:n.value])
    n.value = 0
    return out


def test_xla_hands_a_token_as_a_distinct_non_null_pointer_and_so_does_ccshim(probe):
    x = np.arange(4, dtype=np.float32)
    xla = jax.jit(cj.xla_legacy_call("tok_xla", [S((4,), np.float32)], api_version=2,
                                     ordered=True))(x)
    jax.block_until_ready(xla)
    xla_in, xla_out = _seen(probe)
    ours = jax.jit(cj.legacy_call("tok_ours", [S((4,), np.float32)], ordered=True))(x)
    jax.block_until_ready(ours)
    our_in, our_out = _seen(probe)
    # What XLA's CPU legacy path hands for a token depends on the jaxlib:
    # NULL in 0.6.2 to 0.8.3, from 0.9.2 a pointer per token, non-NULL and
    # distinct (measured by `make test-matrix`).  The typed path's token
    # buffers hold the same, which the adapter forwards: ccshim hands what
    # the running XLA's legacy path hands.
    assert (xla_in is None) == (our_in is None) and (xla_out is None) == (our_out is None)
    if xla_in is not None:
        assert xla_in != xla_out and our_in != our_out
    assert np.asarray(ours[0]).tobytes() == np.asarray(xla[0]).tobytes() == x.tobytes()
    _order(probe)


@pytest.mark.parametrize("path", ["ours", "xla"])
def test_ordered_calls_run_in_program_order(probe, path):
    call = (cj.legacy_call("tok_ours", [S((4,), np.float32)], ordered=True) if path == "ours"
            else cj.xla_legacy_call("tok_xla", [S((4,), np.float32)], api_version=2,
                                    ordered=True))

    def program(x):
        # No data dependence between the calls: only the token orders them.
        a = call(x + 3)
        b = call(x + 1)
        c = call(x + 2)
        return a, b, c
    _order(probe)
    jax.block_until_ready(jax.jit(program)(np.zeros(4, np.float32)))
    assert _order(probe) == [3, 1, 2]


def test_a_signature_must_list_the_tokens_and_options_that_do_not_apply_are_refused(kernels):
    cj.register_legacy("tok_untokened", kernels.token_probe_v2, api_version=2,
                       signature="(x: f32[4]) -> (f32[4], u8[0])")
    with pytest.raises(ValueError, match="end both sides with token"):
        cj.legacy_call("tok_untokened", [S((4,), np.float32)], ordered=True)(
            np.zeros(4, np.float32))
    # a token alone is a single result (mpi4jax's send and barrier)
    cj.register_legacy("tok_alone", kernels.token_probe_v2, api_version=2,
                       signature="(x: f32[4], token[]) -> token[]")
    cj.legacy_call("tok_alone", [], ordered=True)  # accepted; mpi4jax's send is run below
    with pytest.raises(ValueError, match="ordered=True takes none of vmap_method"):
        cj.legacy_call("tok_untokened", [S((4,), np.float32)], ordered=True,
                       vmap_method="sequential")


# --- mpi4jax's kernels, with tokens as its lowerings pass them --------------------

@pytest.fixture(scope="module")
def mpi(mpi4jax):
    MPI, cpu = mpi4jax
    return MPI, cpu.custom_call_targets


def _h(obj, MPI):
    return np.array([MPI._handleof(obj)], np.uint64)


def _pair(targets, kernel, sig):
    cj.register_legacy(f"tok_mpi_{kernel}", targets[kernel], api_version=2, signature=sig)
    cj.register_xla_legacy(f"tok_mpi_xla_{kernel}", targets[kernel])


def test_mpi4jax_allreduce_and_scan_with_tokens(mpi):
    """mpi_allreduce and mpi_scan with the operands their lowerings pass
    (nitems s32[1], the array, op, comm and dtype handles u64[1], a token)
    on one rank: the same bytes as XLA's legacy path and as mpi4py.  (The
    root of mpi_bcast and mpi_reduce leaves its result unwritten, which
    mpi4jax discards; those are no byte comparison on one rank.)"""
    MPI, targets = mpi
    comm = MPI.COMM_WORLD
    sig = ("(n: s32[1], x: f32[...n[0]], op: u64[1], comm: u64[1], dtype: u64[1], token[]) -> "
           "(f32[...n[0]], token[])")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = [S(x.shape, x.dtype)]
    args = (np.array([6], np.int32), x, _h(MPI.SUM, MPI), _h(comm, MPI), _h(MPI.FLOAT, MPI))
    for kernel, reference in [("mpi_allreduce", comm.Allreduce), ("mpi_scan", comm.Scan)]:
        _pair(targets, kernel, sig)
        ours = jax.jit(cj.legacy_call(f"tok_mpi_{kernel}", out, ordered=True))(*args)
        xla = jax.jit(cj.xla_legacy_call(f"tok_mpi_xla_{kernel}", out, api_version=2,
                                         ordered=True))(*args)
        assert np.asarray(ours[0]).tobytes() == np.asarray(xla[0]).tobytes()
        want = np.empty_like(x)
        reference(x, want, op=MPI.SUM)
        assert np.asarray(ours[0]).tobytes() == want.tobytes()
        # a lying count is refused before MPI is called
        with pytest.raises(Exception, match=r"INVALID_ARGUMENT.*has 6 elements, but n\[0\] is 7"):
            jax.block_until_ready(jax.jit(cj.legacy_call(f"tok_mpi_{kernel}", out,
                                                         ordered=True))(
                np.array([7], np.int32), *args[1:]))


def test_mpi4jax_twelve_cpu_kernels_with_tokens_on_two_ranks(mpi):
    """Every CPU kernel of mpi4jax 0.8.1.post2, with the operands and tokens
    its lowerings pass, on two MPI ranks (mpiexec from the mpich wheel):
    ccshim's ordered call and XLA's legacy path give the same bytes, and
    mpi4py's result, on each rank (tests/python/mpi4jax_tokens_worker.py)."""
    import json
    import pathlib
    import re
    import subprocess
    mpiexec = pathlib.Path(sys.executable).parent / "mpiexec"
    if not mpiexec.exists():
        pytest.skip(f"no mpiexec beside {sys.executable} (the mpich wheel is not installed)")
    p = subprocess.run([str(mpiexec), "-n", "2", sys.executable,
                        str(ROOT / "tests" / "python" / "mpi4jax_tokens_worker.py"),
                        str(MPI4JAX_BUILD)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    reports = [json.loads(m) for m in re.findall(r'\{"rank".*?\}\}', p.stdout)]
    assert sorted(r["rank"] for r in reports) == [0, 1], p.stdout
    for r in reports:
        assert len(r["kernels"]) == 12 and set(r["kernels"]) == {
            f"mpi_{k}" for k in ("allgather", "allreduce", "alltoall", "barrier", "bcast",
                                 "gather", "recv", "reduce", "scan", "scatter", "send",
                                 "sendrecv")}, r
        bad = {k: v for k, v in r["kernels"].items() if v != "ok"}
        assert not bad, (r["rank"], bad)
