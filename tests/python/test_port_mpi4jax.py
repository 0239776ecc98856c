"""`ccshim port` on mpi4jax 0.8.1.post2 (docs/port.md): Cython bridges for
CPU, CUDA and SYCL (XPU), lowered with tokens and (on GPU) a binary
descriptor as opaque, the layouts of every call made by its own helper
(`get_default_layouts`, in mpi4jax/_src/utils.py, building its list in a
loop from a lambda chosen by its `order` argument).

The port reads that helper where it is defined, for the call's arguments
(order="c", given or by default): every layout row-major, so the CPU
lowerings are ported.  The CUDA and SYCL lowerings are one rule per
collective for both, and the SYCL kernels (a void* stream) are not ported:
so each such rule is split (_split.py): kept legacy for xpu, and a copy of
it, typed, for cuda, whose kernels get handlers; each said.  Its suite on
the ported build, without ccshim, runs in make census (census.py port: 1 and
2 ranks) and, on a GPU, in make test-gpu (port-mpi4jax).  make test-projects
builds the port with its CUDA bridge and lowers each collective for cuda
beside the legacy build: the same descriptor bytes, typed.
"""

import json
import os
import pathlib
import shutil
import subprocess

import pytest

from conftest import ROOT, fixture_missing
import project_ports
import project_suites
from project_ports import KEPT, NEWEST
from test_gpu_lowerings import legacy_lowering
from test_port import _port

pytest.importorskip("libcst", reason="ccshim port needs libcst (dev/setup.sh test installs it)")

PROJECT = "mpi4jax-0.8.1.post2"
HERE = ROOT / "tests" / "python"
BRIDGE = "mpi4jax/_src/xla_bridge"


def _tree(tmp_path: pathlib.Path) -> pathlib.Path:
    src = project_suites.cached(f"{PROJECT}-src") / PROJECT
    if not (src / "setup.py").exists():
        fixture_missing(f"{PROJECT}'s sdist ({src})")
    dst = tmp_path / "mpi4jax"
    shutil.copytree(src, dst)
    return dst


@pytest.mark.once
def test_its_cpu_and_cuda_are_ported_and_its_shared_gpu_rules_split_each_said(tmp_path):
    done = _port(_tree(tmp_path))
    assert done.returncode == 0, done.stderr
    patch, said = done.stdout, done.stderr
    # what dev/census/ports/ keeps, and census.py port builds and runs
    assert patch == (KEPT / f"{PROJECT}.patch").read_text(), \
        "dev/census/ports/ is stale: python dev/census/ports.py writes it anew"
    assert said == (KEPT / f"{PROJECT}.refused").read_text()
    # every lowering's layouts were read row-major: none is refused for them
    assert "cannot show row-major" not in said, said
    # the twelve CPU and twelve CUDA kernels get handlers, registered typed
    # through its own helper
    assert patch.count("XLA_FFI_Error* mpi_") >= 24, patch.count("XLA_FFI_Error* mpi_")
    assert "_cpu_ffi.cpp" in patch and "_cuda_ffi.cpp" in patch
    assert '+    register_custom_call_target(name, fn, platform="cpu", api_version=1)' in patch
    assert '+        register_custom_call_target(name, fn, platform="CUDA", api_version=1)' \
        in patch
    # 12 CPU lowerings, and 12 typed copies of the shared rules (cuda)
    assert patch.count("jax.ffi.ffi_lowering(") == 24, patch.count("jax.ffi.ffi_lowering(")
    assert patch.count("opaque=_np.frombuffer(descriptor, dtype=_np.uint8)") == 12
    # the wrappers (11) and sendrecv's caller (1) of cuda name the copies
    assert patch.count("+mpi_allreduce_xla_encode_cuda = translation_rule_cuda("
                       "mpi_allreduce_xla_encode_device_ffi)") == 1
    assert "+    return mpi_sendrecv_xla_encode_device_ffi(" in patch
    # jax.core.get_aval (gone in JAX 0.10) imported as today's name for it
    assert "+from jax import typeof as get_aval" in patch
    # the shared CUDA/SYCL rules, each said; the SYCL kernels and their
    # registration kept legacy
    assert said.count("(another GPU platform), not ported: mpi_") == 12, said
    assert said.count("is kept legacy for it; its copy mpi_") == 12, said
    assert f"{BRIDGE}/mpi_xla_bridge_cuda.pyx:" not in said, said
    assert said.count("is a GPU kernel whose stream is neither CUDA's nor HIP's") == 12
    assert "registers the legacy targets of mpi_xla_bridge_xpu through one call" in said
    assert "mpi_xla_bridge_xpu_ffi" not in patch


@pytest.mark.skipif(not os.environ.get("CCSHIM_TEST_PROJECTS"),
                    reason="make test-projects runs it: the ported build takes it past make "
                           "test's time budget")
@pytest.mark.once("newest")  # all it runs runs on .venv-newest's Python
def test_its_ported_cuda_lowerings_carry_the_legacy_descriptor_bytes_typed(tmp_path):
    """Without a GPU: each collective lowered for cuda, by the kept port's
    build in a Python where ccshim cannot be imported
    (port_gpu_lowering_program.py), and by the legacy build through ccshim
    (gpu_lowering_program.py, before its rewrite): the same targets with the
    same descriptor bytes, the port's typed (its `opaque` attribute), the
    legacy ones API version 2 (their backend_config)."""
    if not NEWEST.exists():
        pytest.skip(f"no {NEWEST} (no Python 3.12 here): the newest JAX is not tested")
    if shutil.which("nvcc") is None:
        pytest.skip("no CUDA toolkit here: mpi4jax's CUDA bridge is not built")
    legacy_build = project_suites.cached(f"{PROJECT}-build-cp312")
    if not (legacy_build / ".complete").exists():
        fixture_missing(f"mpi4jax 0.8.1.post2 was not built for Python 3.12 ({legacy_build})")
    site = tmp_path / "site"
    project_ports.build(project_ports.patched(PROJECT, tmp_path), site, project=PROJECT)
    env = project_ports.environment(site, NEWEST, tmp_path / "hlo")
    env["MPI4JAX_NO_WARN_JAX_VERSION"] = "1"
    done = subprocess.run([str(NEWEST), "-S", str(HERE / "port_gpu_lowering_program.py"),
                           str(site)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    ported = json.loads(done.stdout.strip().splitlines()[-1])
    assert ported["ccshim"] == "ModuleNotFoundError: No module named 'ccshim'", ported["ccshim"]
    assert ported["cuda_ext"] is True
    legacy = legacy_lowering(NEWEST, legacy_build)["collectives"]
    assert sorted(ported["collectives"]) == sorted(legacy) and len(legacy) == 12
    for name, calls in ported["collectives"].items():
        before = legacy[name]["legacy"]
        assert [c[0] for c in calls] == [c[0] for c in before] == [f"mpi_{name}"], (name, calls)
        assert [c[1] for c in calls] == [4] and [c[1] for c in before] == [2], (name, calls)
        # a descriptor of a few dozen bytes, the same on both but for the
        # padding the project's struct leaves unset
        ours, theirs = (_unpadded(name, c[0][2]) for c in (calls, before))
        assert ours == theirs and len(ours) >= 4, (name, calls, before)


# With MPICH's 4-byte handles, the descriptors (device_descriptors.pxd)
# whose status pointer follows an odd number of 4-byte fields have 4 bytes
# of padding before it, which mpi4jax's Cython struct literal leaves as
# whatever the stack held (sendrecv's, lowered by the legacy build and by
# the port, differed there and only there): RecvDescriptor (5 fields) and
# SendrecvDescriptor (9).
_PADDING = {"recv": (20, 24), "sendrecv": (36, 40)}


def _unpadded(name: str, descriptor: str) -> bytes:
    data = bytearray.fromhex(descriptor)
    if name in _PADDING:
        start, end = _PADDING[name]
        assert len(data) == end + 8, (name, descriptor)    # then the pointer
        data[start:end] = bytes(end - start)
    return bytes(data)


@pytest.mark.skipif(not os.environ.get("CCSHIM_TEST_PROJECTS"),
                    reason="make test-projects runs it: a second port of mpi4jax takes make "
                           "test past its time budget (test_port_call_forms proves the same "
                           "for jax.ffi.register_ffi_target's loop)")
@pytest.mark.once("newest")
def test_a_bridge_with_a_kernel_it_cannot_port_registers_each_entry_as_it_now_is(tmp_path):
    """Its CPU bridge with one kernel of a signature it does not know: that
    kernel and its lowering stay legacy, the rest are ported, and the
    project's own registration function, called once over the bridge's
    targets, registers each as it now is (before, it kept api_version=0
    for all of them, the typed handlers with them)."""
    tree = _tree(tmp_path)
    pyx = tree / BRIDGE / "mpi_xla_bridge_cpu.pyx"
    old = "cdef void mpi_barrier_cpu(void** out_ptr, void** data_ptr) nogil:"
    assert old in pyx.read_text()
    pyx.write_text(pyx.read_text().replace(
        old, "cdef void mpi_barrier_cpu(void** out_ptr, void** data_ptr, int extra) nogil:"))
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    said = done.stderr.splitlines()
    assert f"ccshim port: {BRIDGE}/__init__.py:33: not ported: registers the targets of " \
           "mpi_xla_bridge_cpu through one call, mpi_barrier not ported (said above): those " \
           "kept legacy (api_version=0)" in said, said
    assert "ccshim port: mpi4jax/_src/collective_ops/barrier.py:79: not ported: lowers " \
           "mpi_barrier (cpu), not ported: kept a legacy custom call" in said, said
    lines = done.stdout.splitlines()
    assert '+    register_custom_call_target(name, fn, platform="cpu", api_version=0 if name in ' \
           '("mpi_barrier",) else 1)' in lines
    assert '+        register_custom_call_target(name, fn, platform="CUDA", api_version=1)' \
        in lines
