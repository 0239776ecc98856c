"""GPU lowerings checked on every run, with no GPU (issue 38, point 4).

mpi4jax 0.8.1.post2 is the project in the tree with CUDA kernels: its CUDA
bridge (mpi_xla_bridge_cuda.pyx, built by dev/setup.sh wherever the CUDA
toolkit is) registers twelve legacy GPU targets, and its lowerings for
cuda build a binary descriptor for each call.  Through its own Python, in
zero-change mode, each collective is lowered for cuda
(tests/python/gpu_lowering_program.py) and rewritten by ccshim: no legacy
call is left, each typed target stands for the kernel zero-change mode
recorded for CUDA (the bridge's own), with the call's descriptor bytes
intact; and ``ccshim scan`` lists the same CUDA targets in mpi4jax's
source.  What runs them on a GPU is ``make test-gpu`` (tests/gpu/).
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT, cached, fixture_missing

HERE = ROOT / "tests" / "python"
ABI = "cp%d%d" % sys.version_info[:2]
MPI4JAX = cached(f"mpi4jax-0.8.1.post2-build-{ABI}")
SOURCE = cached("mpi4jax-0.8.1.post2-src") / "mpi4jax-0.8.1.post2"
COLLECTIVES = ["allgather", "allreduce", "alltoall", "barrier", "bcast", "gather", "reduce",
               "scan", "scatter", "sendrecv", "send", "recv"]


@pytest.fixture(scope="module")
def lowered():
    if not (MPI4JAX / ".complete").exists():
        fixture_missing(f"mpi4jax 0.8.1.post2 was not built for this Python ({MPI4JAX})")
    bridge = list((MPI4JAX / "mpi4jax" / "_src" / "xla_bridge").glob(
        "mpi_xla_bridge_cuda.*.so"))
    if not bridge:
        if shutil.which("nvcc"):
            fixture_missing(f"mpi4jax's CUDA bridge was not built in {MPI4JAX}, though nvcc "
                            "is here")
        pytest.skip("no CUDA toolkit here: mpi4jax's CUDA bridge is not built")
    pytest.importorskip("mpi4py", reason="mpi4py is not installed")
    return legacy_lowering(sys.executable, MPI4JAX)


def legacy_lowering(python, build) -> dict:
    """gpu_lowering_program.py's report: mpi4jax's legacy build lowered for
    cuda by python, through `ccshim legacy --strict`, and rewritten."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "python"), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "MPI4JAX_NO_WARN_JAX_VERSION": "1"}
    env.pop("CCSHIM_LEGACY", None)
    p = subprocess.run([str(python), "-m", "ccshim.legacy", "--strict",
                        str(HERE / "gpu_lowering_program.py"), str(build)],
                       capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_every_collective_lowers_for_cuda_and_is_rewritten_with_its_descriptor(lowered):
    assert lowered["cuda_ext"] is True
    assert sorted(lowered["collectives"]) == sorted(COLLECTIVES)
    for name, got in lowered["collectives"].items():
        target = f"mpi_{name}"
        assert got["platforms"] == ["cuda"]
        (legacy,) = got["legacy"]
        assert legacy[:2] == [target, 2], (name, legacy)
        assert len(legacy[2]) > 0, f"{name}: mpi4jax's cuda lowering gave no descriptor"
        # nothing legacy is left; the same descriptor bytes, as the attribute
        assert got["rewritten"] == [[f"ccshim.v2.{target}", 4, legacy[2]]], (name, got)
        assert got["needed"] == [[f"ccshim.v2.{target}", target, 2, ["cuda"]]], (name, got)


def test_each_typed_target_stands_for_the_kernel_recorded_for_cuda(lowered):
    """The kernel a rewritten call would run on a GPU: what mpi4jax's CUDA
    bridge registered for CUDA (recorded by zero-change mode, never given to
    XLA's legacy registry), which is the bridge's own function."""
    recorded, bridge = lowered["recorded_cuda"], lowered["bridge"]
    for name in COLLECTIVES:
        target = f"mpi_{name}"
        assert recorded.get(target) == bridge[target], target
    assert sorted(recorded) == sorted(bridge)


def test_scan_lists_the_cuda_targets_of_the_source_tree():
    if not SOURCE.is_dir():
        fixture_missing(f"mpi4jax 0.8.1.post2's sdist is not in the cache ({SOURCE})")
    p = subprocess.run([str(BUILD / "tools" / "ccshim"), "scan", str(SOURCE), "--json"],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "CCSHIM_PYTHON": sys.executable})
    assert p.returncode == 0, p.stderr[-2000:]
    found = {(t["name"], t["platform"]): t for t in json.loads(p.stdout)["targets"]}
    for name in COLLECTIVES:
        entry = found.get((f"mpi_{name}", "cuda"))
        assert entry is not None, f"scan lists no cuda target mpi_{name}"
        assert entry["api_version"] == 2, entry
        assert entry["definition"]["file"].endswith("mpi_xla_bridge_cuda.pyx"), entry
        assert entry["definition"]["function"] == f"mpi_{name}_cuda", entry
        assert [r["file"] for r in entry["registrations"]] == [
            "mpi4jax/_src/xla_bridge/mpi_xla_bridge_cuda.pyx"], entry
        # its device lowering's call site, with the descriptor as its opaque
        assert any(c.get("backend_config") == "descriptor" for c in entry["call_sites"]), entry
