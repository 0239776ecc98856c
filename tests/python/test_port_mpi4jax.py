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
2 ranks) and, on a GPU, in make test-gpu (port-mpi4jax).
"""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, fixture_missing
import project_suites

pytest.importorskip("libcst", reason="ccshim port needs libcst (dev/setup.sh test installs it)")

PROJECT = "mpi4jax-0.8.1.post2"
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
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    done = subprocess.run([sys.executable, "-m", "ccshim.port", str(_tree(tmp_path))],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    patch, said = done.stdout, done.stderr
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
