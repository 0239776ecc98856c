"""`ccshim port` on mpi4jax 0.8.1.post2 (docs/port.md): Cython bridges for
CPU, CUDA and SYCL (XPU), lowered with tokens and (on GPU) a binary
descriptor as opaque, the layouts of every call made by its own helper
(`get_default_layouts`, in another module, building its list in a loop).

The port cannot show those layouts row-major, and jax.ffi.ffi_lowering
under skip_ffi_layout_processing=True would give XLA row-major ones: so it
ports nothing of mpi4jax, each call site said with that reason and every
target held (its kernels and registrations kept legacy with it), rather than
a patch whose typed calls might get other layouts than the legacy ones.
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


def test_its_layouts_unshown_hold_every_target_legacy_each_said(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    done = subprocess.run([sys.executable, "-m", "ccshim.port", str(_tree(tmp_path))],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "", done.stdout[:3000]
    said = done.stderr
    # the twelve CPU lowerings, each with the reason
    assert said.count("it cannot show row-major: jax.ffi.ffi_lowering"
                      "(skip_ffi_layout_processing=True) would give XLA row-major ones") >= 12
    for bridge in ("cpu", "cuda"):
        assert said.count(f"{BRIDGE}/mpi_xla_bridge_{bridge}.pyx:") >= 12, said
    assert said.count("a lowering of it stays legacy") >= 24
    assert said.count("is a GPU kernel whose stream is neither CUDA's nor HIP's") == 12
