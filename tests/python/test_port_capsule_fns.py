"""Capsules a native module's functions make themselves (klujax 0.2's
export: `m.def("f", []() { ...; return py::capsule((void *)&f, name); },
"doc")`), registered by literal names (python/ccshim/port/_native.py,
_registering.py; docs/port.md).

tests/fixtures/port/capsule_fns is a legacy CPU extension of that form with
two API version 1 kernels.  Ported, each function's capsule is its kernel's
typed handler, its registration and its lowering typed; built by its own
build and run in a Python where ccshim cannot be imported, it gives NumPy's
bytes, every call XLA compiled typed.  A registration the port cannot follow
may register any of the module's capsules: with one, every kernel of the
module stays legacy, and so do its registrations and lowerings, said.
"""
import json
import pathlib
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
import capsule_fns

x = np.linspace(-1.0, 2.0, 7, dtype=np.float32)
b = np.arange(7, dtype=np.float32) / 3
y = jax.jit(capsule_fns.axpy)(np.float32(1.25), x, b)
s = jax.jit(capsule_fns.cumsum)(x)
print(json.dumps({"axpy": np.asarray(y).tobytes().hex(), "cumsum": np.asarray(s).tobytes().hex()}))
"""


def _tree(tmp_path: pathlib.Path) -> pathlib.Path:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "port" / "capsule_fns", tree)
    return tree


def test_each_functions_capsule_is_its_kernels_typed_handler(tmp_path):
    tree = _tree(tmp_path)
    done = _port(tree, "--apply")
    assert done.returncode == 0 and done.stderr == "ccshim port: 5 files written\n", done.stderr
    source = (tree / "src" / "capsule_fns" / "cpu_ops.cpp").read_text()
    assert "return py::capsule((void *)axpy_ffi, name);" in source
    assert 'return py::capsule((void *)cumsum_ffi, "xla._CUSTOM_CALL_TARGET");' in source
    python = (tree / "src" / "capsule_fns" / "__init__.py").read_text()
    assert 'jax.ffi.register_ffi_target("capsule_fns_axpy", cpu_ops.axpy(), platform="cpu")\n' \
        in python
    assert python.count("jax.ffi.ffi_lowering(") == 2 and "mlir.custom_call" not in python
    out, lines = project_ports.built_run(tree, tmp_path, "ported", RUN, python=PYTHON)
    got = json.loads(out.strip().splitlines()[-1])
    x = np.linspace(-1.0, 2.0, 7, dtype=np.float32)
    b = np.arange(7, dtype=np.float32) / 3
    want = {"axpy": (np.float32(1.25) * x + b).tobytes().hex(),
            "cumsum": np.cumsum(x).tobytes().hex()}
    assert got == want
    calls = [line for line in lines if 'custom_call_target="capsule_fns_' in line]
    assert {t for t in ("axpy", "cumsum") if any(f'"capsule_fns_{t}"' in c for c in calls)} == \
        {"axpy", "cumsum"}, lines
    assert all("api_version=API_VERSION_TYPED_FFI" in c for c in calls), calls


@pytest.mark.once
def test_a_registration_it_cannot_follow_keeps_the_modules_kernels_legacy(tmp_path):
    """register(name, fn) may register either capsule under any name: had
    the handlers been exported, it would register a typed handler as a
    legacy kernel."""
    tree = _tree(tmp_path)
    init = tree / "src" / "capsule_fns" / "__init__.py"
    init.write_text(init.read_text() + "\n\ndef register(name, fn):\n"
                    '    xla_client.register_custom_call_target(name, fn(), platform="cpu")\n')
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    held = ": a lowering or registration of it stays legacy (said below): kept legacy with it"
    said = done.stderr.splitlines()
    assert said[:2] == [f"ccshim port: src/capsule_fns/cpu_ops.cpp:30: not ported: 'axpy'{held}",
                        f"ccshim port: src/capsule_fns/cpu_ops.cpp:37: not ported: 'cumsum'"
                        f"{held}"], said
    assert "ccshim port: src/capsule_fns/__init__.py:55: not ported: registers a name it cannot " \
        "follow, with a capsule that may be cpu_ops's: their kernels kept legacy with it: kept " \
        "as jax.ffi.register_ffi_target(..., api_version=0)" in said, said
    assert "XLA_FFI_DEFINE_HANDLER" not in done.stdout and "ffi_lowering" not in done.stdout, \
        done.stdout
    assert done.stdout.count("api_version=0)\n") == 3, done.stdout


@pytest.mark.once
def test_a_gpu_kernel_a_function_exports_is_said_and_kept_legacy(tmp_path):
    """Its capsule would make its registration typed, while no call site
    learns it is a GPU target, whose legacy opaque bytes it must pass."""
    tree = _tree(tmp_path)
    source = tree / "src" / "capsule_fns" / "cpu_ops.cpp"
    source.write_text(source.read_text().replace(
        "PYBIND11_MODULE(cpu_ops, m) {",
        "#include <cuda_runtime_api.h>\n"
        "void scale_gpu(cudaStream_t stream, void **buffers, const char *opaque,\n"
        "               std::size_t opaque_len) {}\n\n"
        "PYBIND11_MODULE(cpu_ops, m) {\n"
        '  m.def("scale_gpu", []() { return py::capsule((void *)&scale_gpu, "x"); });'))
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    assert "ccshim port: src/capsule_fns/cpu_ops.cpp:34: not ported: 'scale_gpu': scale_gpu " \
        "(src/capsule_fns/cpu_ops.cpp:30) is a GPU kernel exported by a module function " \
        "(m.def): not ported yet" in done.stderr.splitlines(), done.stderr
    assert "scale_gpu_ffi" not in done.stdout and "axpy_ffi" in done.stdout
