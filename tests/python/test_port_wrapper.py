"""`ccshim port` of jax-finufft 0.1.0's lowering forms (docs/port.md, "A
project's own wrapper of custom_call"; python/ccshim/port/_wrapper.py):

- its own `custom_call(*args, **kwargs)`, which returns jaxlib's
  custom_call's `.results` (a TypeError fallback for older jaxlib): its
  calls are the sites, and once none is left the wrapper goes, with the
  import of the custom_call it wrapped;
- a target name made at lowering, `f"...{len(points)}...{suffix}".encode()`,
  its suffix a conditional: matched against the names the module registers
  from its native modules' dicts (a template kernel per name);
- a rule that deletes its ctx (`del ctx`), which the ported site needs;
- the rule registered from another module with its platform bound,
  `partial(lowering.lowering, "cpu")`, and tested in the rule: each site
  lowers for the platforms whose binding reaches it, so the CPU site is
  typed in the CPU form and the GPU one passes the opaque bytes.

Proven by lowering the ported package in real JAX for cpu and cuda, without
a GPU: each call typed, the GPU one with its opaque bytes an attribute.
"""

import importlib
import sys
import types

import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("libcst", reason="ccshim port needs libcst (dev/setup.sh test installs it)")
from test_port import _port  # noqa: E402

CPU_OPS = """\
#include <nanobind/nanobind.h>

namespace nb = nanobind;

template <typename T>
nb::capsule encapsulate_function(T* fn) {
  return nb::capsule(reinterpret_cast<void*>(fn), "xla._CUSTOM_CALL_TARGET");
}

template <int n, typename T>
void add(void* out, void** in) {
  const unsigned char* desc = reinterpret_cast<const unsigned char*>(in[0]);
  T* y = reinterpret_cast<T*>(out);
  for (int i = 0; i < desc[0]; ++i) {
    y[i] = 0;
    for (int k = 0; k < n; ++k) y[i] += reinterpret_cast<const T*>(in[1 + k])[i];
  }
}

nb::dict Registrations() {
  nb::dict dict;
  dict["add1f"] = encapsulate_function(add<1, float>);
  dict["add2f"] = encapsulate_function(add<2, float>);
  dict["add1"] = encapsulate_function(add<1, double>);
  dict["add2"] = encapsulate_function(add<2, double>);
  return dict;
}

NB_MODULE(cpu_ops, m) { m.def("registrations", &Registrations); }
"""

# Only the two-operand kernels on the GPU, as jax-finufft has no 1-D ones
GPU_OPS = """\
#include <nanobind/nanobind.h>
#include <cuda_runtime_api.h>

namespace nb = nanobind;

template <typename T>
nb::capsule encapsulate_function(T* fn) {
  return nb::capsule(reinterpret_cast<void*>(fn), "xla._CUSTOM_CALL_TARGET");
}

void add2f(cudaStream_t stream, void** buffers, const char* opaque, std::size_t opaque_len) {}
void add2(cudaStream_t stream, void** buffers, const char* opaque, std::size_t opaque_len) {}

nb::dict Registrations() {
  nb::dict dict;
  dict["add2f"] = encapsulate_function(add2f);
  dict["add2"] = encapsulate_function(add2);
  return dict;
}

NB_MODULE(gpu_ops, m) { m.def("registrations", &Registrations); }
"""

LOWERING = """\
import numpy as np
from jax.interpreters.mlir import ir
from jax.lib import xla_client
from jaxlib.hlo_helpers import custom_call as _custom_call

from . import cpu_ops

try:
    from . import gpu_ops

    for _name, _value in gpu_ops.registrations().items():
        xla_client.register_custom_call_target(_name, _value, platform="gpu")
except ImportError:
    gpu_ops = None

for _name, _value in cpu_ops.registrations().items():
    xla_client.register_custom_call_target(_name, _value, platform="cpu")


# Handle old versions of jax which had a different syntax for custom_call
def custom_call(*args, **kwargs):
    try:
        return _custom_call(*args, **kwargs).results
    except TypeError:
        kwargs["out_types"] = kwargs.pop("result_types")
        return (_custom_call(*args, **kwargs),)


def default_layouts(*shapes):
    return [range(len(shape) - 1, -1, -1) for shape in shapes]


def lowering(platform, ctx, *points):
    del ctx

    t = ir.RankedTensorType(points[0].type)
    suffix = "f" if t.element_type == ir.F32Type.get() else ""
    op_name = f"add{len(points)}{suffix}".encode("ascii")
    shapes = [t.shape for _ in points]
    desc = np.array([t.shape[0]], dtype=np.uint8)
    if platform == "cpu":
        opaque = ir_constant(desc)
        return custom_call(
            op_name,
            result_types=[t],
            operands=[opaque, *points],
            operand_layouts=default_layouts([1], *shapes),
            result_layouts=default_layouts(t.shape),
        )
    else:
        return custom_call(
            op_name,
            result_types=[t],
            operands=[*points],
            backend_config=desc.tobytes(),
            operand_layouts=default_layouts(*shapes),
            result_layouts=default_layouts(t.shape),
        )


def ir_constant(x):
    from jax.interpreters import mlir
    return mlir.ir_constant(x)
"""

OPS = """\
from functools import partial

from jax.extend.core import Primitive
from jax.interpreters import mlir

from finpkg import lowering

add_p = Primitive("add")
add_p.def_abstract_eval(lambda *xs: xs[0])
mlir.register_lowering(add_p, partial(lowering.lowering, "cpu"), platform="cpu")
if lowering.gpu_ops is not None:
    mlir.register_lowering(add_p, partial(lowering.lowering, "gpu"), platform="gpu")
"""


def _tree(tmp_path, ops: str = OPS):
    tree = tmp_path / "tree"
    (tree / "finpkg").mkdir(parents=True)
    (tree / "finpkg" / "__init__.py").write_text("")
    (tree / "finpkg" / "cpu_ops.cc").write_text(CPU_OPS)
    (tree / "finpkg" / "gpu_ops.cc").write_text(GPU_OPS)
    (tree / "finpkg" / "lowering.py").write_text(LOWERING)
    (tree / "finpkg" / "ops.py").write_text(ops)
    (tree / "CMakeLists.txt").write_text(
        "project(p LANGUAGES CXX)\nfind_package(nanobind CONFIG REQUIRED)\n"
        'nanobind_add_module(cpu_ops "finpkg/cpu_ops.cc")\n'
        'nanobind_add_module(gpu_ops "finpkg/gpu_ops.cc")\n')
    return tree


def _calls(text: str) -> list[str]:
    return [line for line in text.splitlines() if "stablehlo.custom_call @" in line]


def test_a_wrapped_custom_call_with_a_made_name_is_typed_for_each_platform(
        tmp_path, monkeypatch):
    tree = _tree(tmp_path)
    done = _port(tree, "--apply")
    assert done.returncode == 0, done.stderr
    assert done.stderr == "ccshim port: 5 files written\n", done.stderr
    text = (tree / "finpkg" / "lowering.py").read_text()
    # the wrapper and the import of what it wrapped are gone; ctx is kept
    assert "def custom_call" not in text and "_custom_call" not in text, text
    assert "hlo_helpers" not in text and "xla_client" not in text, text
    assert "del ctx" not in text and "def lowering(platform, ctx, *points):\n    t = " in text
    assert "        return jax.ffi.ffi_lowering(\n            op_name,\n" in text, text
    assert 'jax.ffi.register_ffi_target(_name, _value, platform="gpu")\n' in text, text
    assert "opaque=np.frombuffer(desc.tobytes(), dtype=np.uint8))" in text, text
    for name in ("cpu_ops", "gpu_ops"):
        assert "XLA_FFI_DEFINE_HANDLER" in (tree / "finpkg" / f"{name}.cc").read_text()
    assert 'dict["add2f"] = encapsulate_function(add_2_float_ffi);' in \
        (tree / "finpkg" / "cpu_ops.cc").read_text()

    # lowered in JAX, its native modules stood in for (their registrations
    # are the handlers; lowering reads none of them)
    for name in ("cpu_ops", "gpu_ops"):
        monkeypatch.setitem(sys.modules, f"finpkg.{name}",
                            types.SimpleNamespace(registrations=dict))
    monkeypatch.syspath_prepend(str(tree))
    ops = importlib.import_module("finpkg.ops")
    x = jax.ShapeDtypeStruct((3,), jax.numpy.float32)

    def lowered(platform, *args):
        return _calls(jax.jit(ops.add_p.bind).trace(*args).lower(
            lowering_platforms=(platform,)).as_text())
    cpu = lowered("cpu", x, x)
    assert len(cpu) == 1 and "custom_call @add2f(" in cpu[0], cpu
    # (typed: the attributes dictionary, which XLA takes for API version 4)
    assert "mhlo.backend_config = {}" in cpu[0] and "api_version = 2" not in cpu[0], cpu
    one = lowered("cpu", x)
    assert "custom_call @add1f(" in one[0] and "mhlo.backend_config = {}" in one[0], one
    cuda = lowered("cuda", x, x)
    assert len(cuda) == 1 and "custom_call @add2f(" in cuda[0], cuda
    assert "mhlo.backend_config = {opaque = dense<3> : tensor<1xui8>}" in cuda[0], cuda
    assert "api_version = 2" not in cuda[0], cuda
    # the port of the ported tree is nothing
    again = _port(tree)
    assert again.returncode == 0 and again.stdout == "", again.stdout[:2000]


# What is not read as a wrapper: one another module imports (its calls
# there are not seen here), and one that changes what it forwards.  Each
# stays what it was, a custom call whose target it cannot read (said at its
# line), and every target it may lower is held.
IMPORTED = (OPS + "from finpkg.lowering import custom_call  # noqa: F401\n", None, 23)
MORE = (OPS, ("    try:\n        return _custom_call(",
              "    kwargs.setdefault('has_side_effect', True)\n    try:\n"
              "        return _custom_call("), 24)


@pytest.mark.parametrize("ops, edit, line", [IMPORTED, MORE], ids=["imported", "more"])
def test_a_function_that_is_not_only_a_wrapper_holds_its_targets(tmp_path, ops, edit, line):
    tree = _tree(tmp_path, ops)
    if edit is not None:
        lowering = tree / "finpkg" / "lowering.py"
        lowering.write_text(lowering.read_text().replace(*edit))
    done = _port(tree)
    assert done.returncode == 0
    assert f"finpkg/lowering.py:{line}: not ported: a custom call whose target it cannot " \
           "read (passed through *args): not ported" in done.stderr, done.stderr
    assert "XLA_FFI_DEFINE_HANDLER" not in done.stdout


def test_a_numpy_array_bound_as_a_parameter_is_said(tmp_path):
    """jax-finufft's output_shape, `np.atleast_1d(...).astype(np.int64)`
    given to bind: today's Primitive refuses it as unhashable, so the port
    says so (the rest is ported); a tuple is not said."""
    tree = _tree(tmp_path, OPS + (
        "import numpy as np\n\n\n"
        "def add(shape, *xs):\n"
        "    shape = np.atleast_1d(shape).astype(np.int64)\n"
        "    return add_p.bind(*xs, shape=shape, n=len(xs))\n\n\n"
        "def add_tuple(shape, *xs):\n"
        "    return add_p.bind(*xs, shape=tuple(shape))\n"))
    done = _port(tree)
    assert done.returncode == 0
    assert done.stderr == (
        "ccshim port: finpkg/ops.py:18: not ported: binds a primitive with a NumPy array as "
        "its parameter shape, which JAX refuses as unhashable since 0.7.0: not ported (give "
        "it as a tuple; zero-change mode passes it frozen)\n"), done.stderr
    assert "XLA_FFI_DEFINE_HANDLER" in done.stdout


@pytest.mark.parametrize("text, named", [
    ("from .lowering import (\n    custom_call,\n    other,\n)\n", True),
    ("from pkg import lowering\nlowering.custom_call(1)\n", True),
    ("import pkg.lowering as low\nlow.custom_call(1)\n", True),
    ("import pkg.lowering\npkg.lowering.custom_call(1)\n", True),
    ("from pkg.lowering import default_layouts\nmlir.custom_call(1)\n", False),
    ("def f(:\n", False),       # not Python: not importable either
])
def test_another_module_names_a_wrapper_as_python_reads_it(tmp_path, text, named):
    from ccshim.port._wrapper import named_elsewhere
    (tmp_path / "lowering.py").write_text("")
    (tmp_path / "other.py").write_text(text)
    tree = {"pkg.lowering": tmp_path / "lowering.py", "pkg.other": tmp_path / "other.py"}
    assert named_elsewhere({"custom_call"}, "pkg.lowering", tree) == (
        {"custom_call"} if named else set())


def test_a_module_nested_past_python_s_recursion_limit_is_said_not_a_crash(tmp_path):
    """A target name 500 conditionals deep: Python's reader cannot follow
    it; the port says so for the module and goes on, rather than stop with
    a traceback."""
    name = '"k"'
    for i in range(500):
        name = f'("k{i}" if c else {name})'
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "ops.py").write_text(
        "from jax.interpreters import mlir\n\n\ndef rule(ctx, x):\n"
        f"    name = {name}\n"
        "    return mlir.custom_call(name, operands=[x], result_types=[x.type]).results\n")
    done = _port(tree)
    assert done.returncode == 0 and done.stdout == "", done.stderr[-2000:]
    assert done.stderr == "ccshim port: pkg/ops.py: not ported: nested too deeply to read " \
        "(Python's recursion limit): not ported, and every target it may lower kept legacy\n"


@pytest.mark.parametrize("body, kept", [
    ("    del ctx\n\n    y = x\n    return y\n", "    y = x\n    return y\n"),
    ("\n    y = x\n    del ctx\n    return y\n", "\n    y = x\n    return y\n"),
    ("    del ctx, x\n    return 1\n", "    del x\n    return 1\n"),
    ("    if x:\n        del ctx\n    return x\n", "    if x:\n        pass\n    return x\n"),
    ("    def g(ctx):\n        del ctx\n    return g\n", None),     # g's ctx is its own
])
def test_a_del_of_ctx_goes_and_nothing_else(body, kept):
    import libcst
    from ccshim.port._wrapper import keep_ctx
    fn = libcst.parse_module("def f(ctx, x):\n" + body).body[0]
    out = keep_ctx(fn, "ctx")
    if kept is None:
        assert out is fn
    else:
        assert libcst.Module([out]).code == "def f(ctx, x):\n" + kept
