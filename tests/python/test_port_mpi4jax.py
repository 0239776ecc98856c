"""`ccshim port` on mpi4jax 0.8.1.post2 (docs/port.md): Cython bridges for
CPU, CUDA and SYCL (XPU), built by a setup.py that names its CPU module in a
list comprehension and links with mpicc, registered through its own
wrapper, lowered with tokens and (on GPU) a binary descriptor as opaque.

Its patch is kept in dev/census/ports/: the CPU bridge is ported; the CUDA
one is kept legacy, since each op's device lowering is shared by CUDA and
XPU, whose kernels (a void* SYCL stream) are not ported.  Without the XPU
bridge the CUDA one is ported too.  make test-projects builds that tree with
its own setup.py (CUDA found: its CUDA bridge built too, the handlers by the
host compiler) and checks that the CPU bridge's capsules register as typed
FFI targets and run mpi_allreduce and mpi_barrier on the newest JAX, and
that the CUDA bridge's capsules answer XLA's metadata query as typed
handlers.  No GPU runs here.
"""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, fixture_missing
import project_suites

pytest.importorskip("libcst", reason="ccshim port needs libcst (dev/setup.sh test installs it)")

PROJECT = "mpi4jax-0.8.1.post2"
KEPT = ROOT / "dev" / "census" / "ports"
NEWEST = ROOT / ".venv-newest" / "bin" / "python"
BRIDGE = "mpi4jax/_src/xla_bridge"


def _port(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([sys.executable, "-m", "ccshim.port", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300)


def _tree(tmp_path: pathlib.Path) -> pathlib.Path:
    src = project_suites.cached(f"{PROJECT}-src") / PROJECT
    if not (src / "setup.py").exists():
        fixture_missing(f"{PROJECT}'s sdist ({src})")
    dst = tmp_path / "mpi4jax"
    shutil.copytree(src, dst)
    return dst


def test_the_kept_patch_is_what_port_prints_now_and_git_apply_takes_it(tmp_path):
    tree = _tree(tmp_path)
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (KEPT / f"{PROJECT}.patch").read_text(), \
        "dev/census/ports/ is stale: python dev/census/ports.py writes it anew"
    assert done.stderr == (KEPT / f"{PROJECT}.refused").read_text()
    # The CPU bridge's build (a comprehension's module), its registration
    # through mpi4jax's wrapper, its lowerings; the CUDA and XPU bridges said.
    assert '+                if stem in ("mpi_xla_bridge_cpu",):' in done.stdout
    assert '+    register_custom_call_target(name, fn, platform="cpu", api_version=1)' \
        in done.stdout
    said = done.stderr
    assert said.count("_cuda.pyx") == 12 and said.count("a lowering of it stays legacy") == 12
    assert said.count("is a GPU kernel whose stream is neither CUDA's nor HIP's") == 12
    assert "registers the legacy targets of mpi_xla_bridge_cuda" in said
    patch = tmp_path / "port.patch"
    patch.write_text(done.stdout)
    applied = subprocess.run(["git", "apply", str(patch)], cwd=tree, capture_output=True,
                             text=True)
    assert applied.returncode == 0, applied.stderr
    again = _port(tree)
    assert again.returncode == 0 and again.stdout == "", again.stderr


def _without_xpu(tmp_path: pathlib.Path) -> pathlib.Path:
    """mpi4jax as a project with no XPU bridge: its .pyx and lowerings gone."""
    tree = _tree(tmp_path)
    (tree / BRIDGE / "mpi_xla_bridge_xpu.pyx").unlink()
    for ops in (tree / "mpi4jax/_src/collective_ops").glob("*.py"):
        text = ops.read_text()
        ops.write_text(re.sub(r'^register_lowering\([^\n]*platform="xpu"\)\n', "", text,
                              flags=re.M))
    return tree


def test_without_its_xpu_bridge_its_cuda_bridge_is_ported(tmp_path):
    tree = _without_xpu(tmp_path)
    done = _port(tree, "--apply")
    assert done.returncode == 0 and "not ported" not in done.stderr, done.stderr
    handlers = (tree / BRIDGE / "mpi_xla_bridge_cuda_ffi.cpp").read_text()
    assert "#include <cuda_runtime_api.h>" in handlers
    assert handlers.count("xla_legacy_call::GpuHandler<") == 12
    allgather = (tree / "mpi4jax/_src/collective_ops/allgather.py").read_text()
    assert ")(ctx, *operands, opaque=_np.frombuffer(descriptor, dtype=_np.uint8))" in allgather
    assert "has_side_effect=True" in allgather and "custom_call(" not in allgather
    init = (tree / BRIDGE / "__init__.py").read_text()
    assert 'platform="CUDA", api_version=1)' in init


@pytest.mark.skipif(not os.environ.get("CCSHIM_TEST_PROJECTS"),
                    reason="make test-projects runs it: mpi4jax's build (four Cython modules, "
                           "about 40 s on two cores) is past make test's time budget")
def test_the_ported_bridges_build_and_their_capsules_are_typed_handlers(tmp_path):
    builder = project_suites.cached("venv-build-cp312") / "bin" / "python"
    headers = project_suites.cached("venv-jax-0.11.2") / "bin" / "python"
    for python in (NEWEST, builder, headers):
        if not python.exists():
            fixture_missing(f"{python} (dev/setup.sh test makes it)")
    if shutil.which("nvcc") is None and not pathlib.Path("/usr/local/cuda/include").is_dir():
        pytest.skip("no CUDA toolkit here: mpi4jax's setup.py would not build its CUDA bridge")
    tree = _without_xpu(tmp_path)
    assert _port(tree, "--apply").returncode == 0
    site = subprocess.run([str(headers), "-c", "import site; print(site.getsitepackages()[0])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    built = subprocess.run([str(builder), "setup.py", "build_ext", "--inplace"], cwd=tree,
                           env={**os.environ, "PYTHONPATH": site, "PATH": f"{builder.parent}"
                                f"{os.pathsep}/usr/local/cuda/bin{os.pathsep}"
                                f"{os.environ['PATH']}"},
                           capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    for module in ("mpi_xla_bridge_cpu", "mpi_xla_bridge_cuda"):
        assert list((tree / BRIDGE).glob(f"{module}.*.so")), built.stdout[-2000:]
    env = dict(os.environ, MPI4JAX_NO_WARN_JAX_VERSION="1")
    env.pop("PYTHONPATH", None)
    here = pathlib.Path(__file__).parent
    ran = subprocess.run([str(NEWEST), str(here / "mpi4jax_port_program.py"), str(tree)],
                         cwd=here, env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    report = json.loads(ran.stdout.splitlines()[-1])
    assert report["allreduce"] == [0.0, 1.0, 2.0, 3.0, 4.0]     # SUM over one rank
    assert len(report["targets"]) == 12
    # The CUDA bridge's capsules: typed handlers (XLA's metadata query)
    asked = subprocess.run([str(NEWEST), str(here / "capsule_metadata_program.py"), str(tree),
                            f"{BRIDGE.replace('/', '.')}.mpi_xla_bridge_cuda",
                            "custom_call_targets"], cwd=here,
                           env=dict(os.environ, PYTHONPATH=str(ROOT / "python")),
                           capture_output=True, text=True, timeout=300)
    assert asked.returncode == 0, asked.stderr[-3000:]
    answers = [line.split() for line in asked.stdout.splitlines()]
    assert len(answers) == 12 and all(a[1:3] == ["0", "0"] and int(a[3]) >= 1 for a in answers)
