"""A ported call site whose layouts are not row-major (docs/port.md,
"Layouts"; python/ccshim/port/_typed_call.py).

tests/fixtures/port/layout_ext is a legacy CPU extension whose call gives its
operand and result a column-major layout and adds a scratch result its rule
drops, as veros 1.7.0's CUDA lowering does, through JAX's own custom_call.
Its kernel reads and writes in memory order, so what it gives depends on the
layouts XLA honours.  Ported, the call is typed in place with its layouts;
built by its own build and run in a Python where ccshim cannot be imported,
it gives the bytes the unported build gives on XLA's legacy path, on JAX
0.10.2 and 0.12.0.1 (each suite's), both what the column-major layouts mean,
not what row-major ones would.  The same call
through a custom_call gone from today's JAX is said and kept legacy.
"""
import json
import pathlib
import re
import shutil
import sys

import numpy as np
import pytest

from conftest import FIXTURES
import project_ports
from test_port import _port

PYTHON = pathlib.Path(sys.executable)    # the suite's venv's

RUN = """\
import json
import numpy as np
import jax
import layout_ext

x = np.arange(12, dtype=np.float32).reshape(3, 4) * 10
(y,) = jax.jit(layout_ext.ramp)(x)
print(json.dumps(np.asarray(y).tolist()))
"""


def _run(tree: pathlib.Path, tmp_path: pathlib.Path, name: str) -> tuple[list, list[str]]:
    """tree built by its own build, its ramp run on the suite's JAX without
    ccshim; the result and the custom-call lines of what XLA compiled."""
    out, lines = project_ports.built_run(tree, tmp_path, name, RUN, python=PYTHON)
    calls = [line for line in lines if 'custom_call_target="layout_ext_ramp"' in line]
    return json.loads(out.strip().splitlines()[-1]), calls


def legacy_and_ported(fixture: str, tmp_path: pathlib.Path) -> tuple[pathlib.Path,
                                                                      pathlib.Path]:
    """Two copies of a pybind11 fixture of tests/fixtures/port built by
    scikit-build-core: as it is, and ported in place with nothing refused
    (its kernels' file, its ops.py, its CMakeLists.txt and pyproject.toml
    edited, xla_legacy_call.h added)."""
    pytest.importorskip("scikit_build_core", reason="the fixture's build backend (dev/setup.sh "
                        "test installs it)")
    pytest.importorskip("pybind11", reason="the fixture's kernels are pybind11's")
    legacy_tree, tree = tmp_path / "legacy", tmp_path / "tree"
    shutil.copytree(FIXTURES / "port" / fixture, legacy_tree)
    shutil.copytree(FIXTURES / "port" / fixture, tree)
    done = _port(tree, "--apply")
    assert done.returncode == 0 and done.stderr == "ccshim port: 5 files written\n", done.stderr
    return legacy_tree, tree


def test_a_call_of_column_major_layouts_is_typed_in_place_and_gives_the_legacy_bytes(tmp_path):
    """On each suite's JAX (0.10.2 and 0.12.0.1), the fixture built by that
    suite's Python."""
    legacy_tree, tree = legacy_and_ported("layout_ext", tmp_path)
    ops = (tree / "src" / "layout_ext" / "ops.py").read_text()
    assert "        result_layouts=(layout, (0,)),\n        backend_config={},\n" \
           "        api_version=4,\n    )\n    return out.results[:-1]\n" in ops, ops
    assert _port(tree).stdout == ""
    ported, calls = _run(tree, tmp_path, "ported")
    legacy, legacy_calls = _run(legacy_tree, tmp_path, "legacy")
    x = np.arange(12, dtype=np.float32).reshape(3, 4) * 10
    column_major = x + np.arange(12, dtype=np.float32).reshape(3, 4, order="F")
    assert ported == legacy == column_major.tolist(), (ported, legacy)
    # XLA's own dump: typed where it was legacy, the layouts the same
    assert calls and all("api_version=API_VERSION_TYPED_FFI" in line for line in calls), calls
    assert legacy_calls and all("API_VERSION_STATUS_RETURNING" in line
                                for line in legacy_calls), legacy_calls
    shapes = {re.sub(r"api_version=\w+|backend_config=\S+", "", line).split("custom-call(")[0]
              .split("=", 1)[1] for line in calls + legacy_calls}
    assert shapes == {" (f32[3,4]{0,1}, f32[12]{0}) "}, shapes


@pytest.mark.once
def test_a_call_of_other_layouts_through_a_removed_custom_call_is_kept_legacy(tmp_path):
    """jaxlib's hlo_helpers.custom_call (removed from today's jaxlib): the
    port would have to call another function, so it says so and keeps the
    call, its kernel and its registration legacy."""
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "port" / "layout_ext", tree)
    ops = tree / "src" / "layout_ext" / "ops.py"
    ops.write_text(ops.read_text().replace("from jax._src.interpreters.mlir import custom_call",
                                           "from jaxlib.hlo_helpers import custom_call"))
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    said = done.stderr.splitlines()
    assert "ccshim port: src/layout_ext/ops.py:23: not ported: a custom call whose " \
           "operand_layouts and result_layouts it cannot show row-major, through " \
           "jaxlib.hlo_helpers.custom_call, not JAX's own " \
           "jax._src.interpreters.mlir.custom_call: jax.ffi.ffi_lowering would give XLA " \
           "other layouts, and no typed custom call keeps them there: kept legacy, its " \
           "targets held" in said, said
    assert "ccshim port: src/layout_ext/cpu_ops.cpp:29: not ported: 'layout_ext_ramp': a " \
           "lowering of it stays legacy (said below): kept legacy with it" in said, said
    assert done.stdout == "", done.stdout
