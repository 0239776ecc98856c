"""Zero-change mode (issue 20, point 1): `import ccshim.legacy` before an
extension, and its legacy registrations and call sites run through ccshim
unchanged; in strict mode no legacy call reaches XLA.  Each program runs in
a process of its own (the mode patches JAX for the whole process):

* tests/python/legacy_mode_program.py: an extension written as veros and
  mpi4jax wrote theirs (register_ffi_target(api_version=0), lowerings with
  mlir.custom_call's default api_version 2, ffi_call with
  custom_call_api_version 1 and 3 and a descriptor);
* tests/python/veros_tdma_program.py: veros 1.7.0's own TDMA (from its
  sdist on PyPI, its Cython extension built by dev/setup.sh), on the
  running JAX and, from the pinned venv's run, on JAX 0.11.2 (the newest
  veros allows; a venv of the cache's): the bytes of XLA's legacy path, and
  scipy's solve_banded.  make test runs this file on the pinned JAX and on
  the newest, so each JAX runs veros once.
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from conftest import BUILD, ROOT, fixture_missing, left_to_test_projects
from project_modules import CACHE, veros_build

HERE = ROOT / "tests" / "python"
KERNELS = BUILD / "tests" / "libccshim_pytest_kernels.so"


# JAX's persistent compilation cache, in the per-user cache, for veros's
# model run: its some 290 compiles are most of its time (42 s of 50 on the
# newest JAX, 15 s once cached).  Safe for what the test proves: ccshim's
# rewrite and strict check run on each module before JAX looks it up
# (ccshim.legacy wraps compile_or_get_cached), the key is the rewritten
# module with JAX's and jaxlib's versions, and every run executes.  About
# 2 MB a JAX (no size limit: JAX's needs the filelock package).
COMPILED = {"JAX_COMPILATION_CACHE_DIR": str(CACHE / "jax-compilation-cache"),
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"}


def _run(python, program, *args, timeout=300, cwd=None, env=None):
    # ccshim from this tree, also in a venv of the cache's shared by clones
    env = {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "python"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    p = subprocess.run([str(python), str(HERE / program), *map(str, args)], capture_output=True,
                       text=True, timeout=timeout, cwd=cwd, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_an_unchanged_extension_runs_through_ccshim():
    xla = _run(sys.executable, "legacy_mode_program.py", "xla", KERNELS)
    on = _run(sys.executable, "legacy_mode_program.py", "on", KERNELS)
    strict = _run(sys.executable, "legacy_mode_program.py", "strict", KERNELS)
    assert on["outputs"] == strict["outputs"] == xla["outputs"]
    x = np.linspace(-1, 1, 256, dtype=np.float32)
    got = {k: np.frombuffer(bytes.fromhex(v), np.float32) for k, v in strict["outputs"].items()}
    np.testing.assert_array_equal(got["v1 via ffi_call"], 2 * x)
    np.testing.assert_array_equal(got["v3 with a descriptor"], np.float32(3) * x)
    # XLA was given only ccshim's typed targets, each for its call's form
    assert strict["targets"] == {"v1 via ffi_call": ["ccshim.v1.ext_scale_v1"],
                                 "v2 via mlir.custom_call": ["ccshim.v2.ext_scale_v2"],
                                 "v3 with a descriptor": ["ccshim.v3.ext_scale_v3"]}
    assert xla["targets"]["v2 via mlir.custom_call"] == ["ext_scale_v2"]
    # ccshim made its capsules without touching ctypes.pythonapi's shared
    # prototypes: the extension's own PyCapsule_New, called with None as its
    # destructor after ccshim registered, still works (issue 37)
    for run in (xla, on, strict):
        assert run["capsule_after"] == "made", run["capsule_after"]
        assert run["pythonapi"] == {"PyCapsule_New": ["c_void_p", "c_char_p", "c_void_p"],
                                    "PyCapsule_GetName": "unset",
                                    "PyCapsule_GetPointer": "unset",
                                    "PyCapsule_IsValid": "unset"}, run["pythonapi"]
    # strict: a legacy call whose registration bypassed ccshim is an error
    assert "ccshim.legacy (strict): legacy custom call(s) to ext_late (api_version 1) would " \
           "reach XLA's legacy path" in strict["strict_refused"]
    late, malformed = strict["signature_refused"]
    assert "'ext_scale_v1' on host was already wrapped, without this signature" in late
    assert "signature column 7: expected ',' or ']' after a dimension" in malformed


# (python, veros build) for each place veros is run: the running JAX, and
# from the pinned venv JAX 0.11.2, which has no suite of its own
def _veros_places():
    here = pathlib.Path(sys.executable)
    places = [pytest.param(here, veros_build("cp%d%d" % sys.version_info[:2]), id="running")]
    if pathlib.Path(sys.prefix).resolve() == (ROOT / ".venv").resolve():
        places.append(pytest.param(CACHE / "venv-jax-0.11.2" / "bin" / "python",
                                   veros_build("cp312"), id="0.11.2"))
    return places


@pytest.mark.parametrize("python, build", _veros_places())
def test_veros_tdma_unchanged_in_strict_mode(python, build):
    if not (build / ".complete").exists():
        fixture_missing(f"veros 1.7.0 was not built for this Python ({build})")
    if not python.exists():
        fixture_missing(f"{python} was not made (it needs a Python 3.12)")
    xla = _run(python, "veros_tdma_program.py", "xla", build)
    ours = _run(python, "veros_tdma_program.py", "strict", build)
    assert ours["outputs"] == xla["outputs"]
    assert ours["targets"] == {"float64": ["ccshim.v2.tdma_cython_double"],
                               "float32": ["ccshim.v2.tdma_cython_float"]}
    assert xla["targets"] == {"float64": ["tdma_cython_double"],
                              "float32": ["tdma_cython_float"]}
    assert ours["scipy_error"]["float64"] < 1e-13 and ours["scipy_error"]["float32"] < 1e-5
    # With a signature given to each kernel, still without changing veros:
    # its s64[1] operands tied to the buffers; the same bytes, and a mask
    # that disagrees with the systems refused before the kernel runs.
    checked = _run(python, "veros_tdma_program.py", "checked", build)
    assert checked["outputs"] == xla["outputs"] and checked["targets"] == ours["targets"]
    assert ("INVALID_ARGUMENT" in checked["lie"] and
            "arg 4: has 5 elements, but n[0] is 30 (the value of arg 5)" in checked["lie"]), \
        checked["lie"]


@pytest.mark.parametrize("python, build", _veros_places())
def test_a_short_veros_model_run_unchanged_in_strict_mode(python, build, tmp_path):
    # veros 1.7.0's acc_basic setup, four iterations, on the running JAX and
    # from the pinned venv on JAX 0.11.2 (the newest its requirements
    # allow): the whole state after the run is the same as on XLA's legacy
    # path, and strict mode proves no legacy call reached XLA.
    if left_to_test_projects():
        pytest.skip("make test runs the model on the newest JAX; make test-projects on "
                    "this one and on 0.11.2 too")
    if not (build / ".complete").exists():
        fixture_missing(f"veros 1.7.0 was not built for this Python ({build})")
    if not python.exists():
        fixture_missing(f"{python} was not made (it needs a Python 3.12)")
    runs = {}
    for mode in ("xla", "strict"):
        where = tmp_path / mode
        where.mkdir()
        runs[mode] = _run(python, "veros_model_program.py", mode, build, timeout=600, cwd=where,
                          env=COMPILED)
        if "skip" in runs[mode]:
            pytest.skip(runs[mode]["skip"])
    xla, ours = runs["xla"], runs["strict"]
    assert xla["iterations"] == ours["iterations"] == 4
    assert xla["variables"] == ours["variables"] > 100
    assert ours["digest"] == xla["digest"]
    assert ours["wrapped"] == [["host", "ccshim.v2.tdma_cython_double"]]

