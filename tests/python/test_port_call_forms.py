"""The call sites `ccshim port` types in place, and the arguments its
ffi_lowering keeps (docs/port.md, "Layouts" and "A CustomCallOp built by
hand, and a legacy ffi_call"; python/ccshim/port/_typed_call.py).

tests/fixtures/port/call_forms is a legacy CPU extension with one of each:
- JAX's own custom_call giving its operand and result a column-major
  layout, with a scratch result its rule drops, as veros 1.7.0's CUDA
  lowering does (ffi_lowering cannot carry those layouts);
- a stablehlo.CustomCallOp built by hand (API version 1, written as
  ir.IntegerAttr.get), as Enzyme-JAX and jax-triton build theirs, also
  column-major;
- jax.ffi.ffi_call with custom_call_api_version and legacy_backend_config,
  as flash-attn-jax calls its kernels, a tuple result batched by vmap;
- JAX's own custom_call with its result aliasing an operand, in a rule that
  returns its .results (ported to ffi_lowering, the alias kept) and in one
  that uses its op, as jaxdecomp reshapes its (typed in place).
Its kernels work in memory order, so what they give depends on the layouts
XLA honours.  Ported, built by its own build and run in a Python where
ccshim cannot be imported, it gives the bytes the unported build gives on
XLA's legacy path, on JAX 0.10.2 and 0.12.0.1 (each suite's): the
column-major answers, and XLA's dump shows each call typed, its layouts and
aliases as they were.
"""
import concurrent.futures
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
import call_forms

x = np.arange(12, dtype=np.float32).reshape(3, 4)
(ramp,) = jax.jit(call_forms.ramp)(x * 10)
(y,) = jax.jit(lambda x: call_forms.affine(2.5, x))(x)
sums, total = jax.jit(call_forms.cumsum)(x[0])
rows, totals = jax.jit(jax.vmap(call_forms.cumsum))(x)
(bumped,) = jax.jit(call_forms.bump)(x)
(flat,) = jax.jit(call_forms.bump_flat)(x)
print(json.dumps({"ramp": np.asarray(ramp).tolist(), "affine": np.asarray(y).tolist(),
                  "cumsum": np.asarray(sums).tolist(), "total": float(total),
                  "rows": np.asarray(rows).tolist(), "totals": np.asarray(totals).tolist(),
                  "bump": np.asarray(bumped).tolist(), "bump_flat": np.asarray(flat).tolist()}))
"""


def _run(tree: pathlib.Path, tmp_path: pathlib.Path, name: str) -> tuple[dict, list[str]]:
    """tree built by its own build, RUN on the suite's JAX without ccshim;
    what it printed, and the custom-call lines of what XLA compiled."""
    out, lines = project_ports.built_run(tree, tmp_path, name, RUN, python=PYTHON)
    calls = [line for line in lines if 'custom_call_target="call_forms_' in line]
    return json.loads(out.strip().splitlines()[-1]), calls


def _shapes(calls: list[str], target: str) -> set[str]:
    """The result shapes (with layouts) of a target's calls."""
    return {line.split("=", 1)[1].split("custom-call(")[0] for line in calls
            if f'"call_forms_{target}"' in line}


def test_each_form_is_typed_and_gives_the_legacy_bytes(tmp_path):
    """On each suite's JAX (0.10.2 and 0.12.0.1), the fixture built by that
    suite's Python."""
    pytest.importorskip("scikit_build_core", reason="the fixture's build backend (dev/setup.sh "
                        "test installs it)")
    pytest.importorskip("pybind11", reason="the fixture's kernels are pybind11's")
    legacy_tree, tree = tmp_path / "legacy", tmp_path / "tree"
    shutil.copytree(FIXTURES / "port" / "call_forms", legacy_tree)
    shutil.copytree(FIXTURES / "port" / "call_forms", tree)
    done = _port(tree, "--apply")
    assert done.returncode == 0 and done.stderr == "ccshim port: 5 files written\n", done.stderr
    ops = (tree / "src" / "call_forms" / "ops.py").read_text()
    # the column-major custom_call, typed in place
    assert "        result_layouts=(layout, (0,)),\n        backend_config={},\n" \
           "        api_version=4,\n    )\n    return out.results[:-1]\n" in ops, ops
    # the CustomCallOp
    assert "        backend_config=ir.DictAttr.get({}),\n" \
           "        api_version=ir.IntegerAttr.get(i32_type, 4),\n" in ops, ops
    # the ffi_call
    assert '        vmap_method="sequential",\n    )(np.int32(x.size), x)\n' in ops, ops
    assert "custom_call_api_version=" not in ops and "legacy_backend_config=" not in ops
    # JAX's own custom_call: where the rule returns its .results, ffi_lowering
    # with its aliases; where its op is used, typed in place
    assert "        operand_output_aliases={1: 0},\n        skip_ffi_layout_processing=True,\n" \
           "    )(ctx, *[mlir.ir_constant(np.int32(np.prod(t.shape))), x])\n" in ops, ops
    assert "        operand_output_aliases={1: 0},\n        backend_config={},\n" \
           "        api_version=4,\n    )\n" in ops, ops
    assert _port(tree).stdout == ""
    # both built and run at once: their time is mostly waiting on their build
    # tools and JAX's start
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        each = [pool.submit(_run, t, tmp_path, name)
                for t, name in ((tree, "ported"), (legacy_tree, "legacy"))]
        (ported, calls), (legacy, legacy_calls) = (f.result() for f in each)
    assert ported == legacy, (ported, legacy)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    ramp_f = np.arange(12, dtype=np.float32).reshape(3, 4, order="F")
    assert ported["ramp"] == (x * 10 + ramp_f).tolist()
    assert ported["affine"] == (2.5 * x + ramp_f).tolist()
    assert ported["cumsum"] == np.cumsum(x[0]).tolist() and ported["total"] == x[0].sum()
    assert ported["rows"] == np.cumsum(x, axis=1).tolist()
    assert ported["totals"] == x.sum(axis=1).tolist()
    assert ported["bump"] == (x + 1).tolist() and ported["bump_flat"] == (x + 1).ravel().tolist()
    # XLA's own dump: every call typed where each was legacy (the batched
    # call too), the layouts and aliases the same on both
    targets = {re.search(r'custom_call_target="(\w+)"', c).group(1) for c in calls}
    assert targets == {f"call_forms_{t}" for t in ("ramp", "affine", "cumsum", "bump")}, calls
    assert all("api_version=API_VERSION_TYPED_FFI" in line for line in calls), calls
    assert legacy_calls and not any("API_VERSION_TYPED_FFI" in line
                                    for line in legacy_calls), legacy_calls
    assert _shapes(calls, "ramp") == _shapes(legacy_calls, "ramp") == {
        " (f32[3,4]{0,1}, f32[12]{0}) "}
    assert _shapes(calls, "affine") == _shapes(legacy_calls, "affine") == {" f32[3,4]{0,1} "}
    bumps = [line for line in calls + legacy_calls if "call_forms_bump" in line]
    assert len(bumps) >= 4 and all("output_to_operand_aliasing={{}: (1, {})}" in line
                                   for line in bumps), bumps


def _edited_port(tmp_path: pathlib.Path, *edits: tuple[str, str]):
    """The port of the fixture with its ops.py edited (each (old, new) once):
    what it did, and the lines it said."""
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "port" / "call_forms", tree)
    ops = tree / "src" / "call_forms" / "ops.py"
    text = ops.read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    ops.write_text(text)
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    return done, done.stderr.splitlines()


@pytest.mark.once
def test_a_call_it_would_type_in_place_through_a_removed_custom_call_is_kept_legacy(tmp_path):
    """jaxlib's hlo_helpers.custom_call (removed from today's jaxlib): where
    the port would have to keep the call (layouts not row-major, its op
    used), it says so and keeps the call, its kernel and its registration
    legacy; the other forms are ported."""
    done, said = _edited_port(tmp_path, ("from jax._src.interpreters.mlir import custom_call",
                                         "from jaxlib.hlo_helpers import custom_call"))
    assert "ccshim port: src/call_forms/ops.py:29: not ported: a custom call whose " \
           "operand_layouts and result_layouts it cannot show row-major, through " \
           "jaxlib.hlo_helpers.custom_call, not JAX's own " \
           "jax._src.interpreters.mlir.custom_call: jax.ffi.ffi_lowering would give XLA " \
           "other layouts, and no typed custom call keeps them there: kept legacy, its " \
           "targets held" in said, said
    assert "ccshim port: src/call_forms/ops.py:99: not ported: a custom call outside a " \
           "lowering rule with a ctx parameter, or whose op (not .results) is used, through " \
           "jaxlib.hlo_helpers.custom_call, not JAX's own " \
           "jax._src.interpreters.mlir.custom_call: kept legacy, its targets held" in said, said
    # its other call, which ffi_lowering could carry, stays legacy with it
    assert "ccshim port: src/call_forms/ops.py:110: not ported: lowers call_forms_bump (cpu), " \
           "kept legacy for another of their lowerings (said there): kept a legacy custom " \
           "call" in said, said
    for target, line in (("ramp", 66), ("bump", 69)):
        assert f"ccshim port: src/call_forms/cpu_ops.cpp:{line}: not ported: " \
               f"'call_forms_{target}': a lowering or registration of it stays legacy " \
               "(said below): kept legacy with it" in said, said
    assert "XLA_FFI_DEFINE_HANDLER(affine_ffi," in done.stdout
    assert "ramp_ffi" not in done.stdout and "bump_ffi" not in done.stdout
    # the module's loop registers each entry as it now is
    assert '+    jax.ffi.register_ffi_target(_name, _value, platform="cpu", api_version=0 if ' \
           '_name in ("call_forms_bump", "call_forms_ramp") else 1)' in done.stdout.splitlines()


@pytest.mark.once
def test_a_legacy_ffi_call_whose_function_is_called_elsewhere_is_kept_legacy(tmp_path):
    """On GPU the opaque goes to the call of the function ffi_call makes,
    which the port edits only where it is made: elsewhere, the site is said
    and kept legacy with its target."""
    done, said = _edited_port(tmp_path, ("    return jax.ffi.ffi_call(\n",
                                         "    f = jax.ffi.ffi_call(\n"),
                              ("    )(np.int32(x.size), x)\n",
                               "    )\n    return f(np.int32(x.size), x)\n"))
    assert "ccshim port: src/call_forms/ops.py:88: not ported: a custom call (an ffi_call) " \
           "whose function is not called where it is made: kept legacy, its targets held" \
           in said, said
    assert "ccshim port: src/call_forms/cpu_ops.cpp:68: not ported: 'call_forms_cumsum': a " \
           "lowering or registration of it stays legacy (said below): kept legacy with it" \
        in said, said
    assert "+        api_version=ir.IntegerAttr.get(i32_type, 4)," in done.stdout.splitlines()


@pytest.mark.once
def test_a_custom_call_op_s_edit_imports_only_what_it_uses():
    """A CustomCallOp whose StringAttr is imported by name (no `ir.` to make
    its DictAttr with) and which gives no api_version: both are written with
    the module's mlir; numpy is imported only for the GPU form's bytes."""
    from ccshim.port import _python
    source = ("from jaxlib.mlir.ir import StringAttr\n"
              "from jaxlib.mlir.dialects import stablehlo\n"
              "from jax.interpreters import mlir\n\n\n"
              "def _rule(ctx, x):\n"
              "    return stablehlo.CustomCallOp([x.type], [x], "
              "call_target_name=StringAttr.get(\"k\"), backend_config=StringAttr.get(\"ab\"))"
              ".results\n")
    said = []
    cpu = _python.port("m.py", source, {"k"}, set(), {}, said, kernels={"k": {"cpu": True}})
    gpu = _python.port("m.py", source, {"k"}, set(), {}, said, kernels={"k": {"cuda": True}})
    assert said == []
    assert "backend_config=mlir.ir.DictAttr.get({}), api_version=mlir.i32_attr(4))" in cpu
    assert "numpy" not in cpu
    assert gpu.startswith("import numpy\n") and "backend_config=mlir.ir.DictAttr.get(" \
        '{"opaque": mlir.ir_attribute(numpy.frombuffer(b\'ab\', dtype=numpy.uint8))}), ' \
        "api_version=mlir.i32_attr(4))" in gpu, gpu


@pytest.mark.once
def test_sphericart_jax_s_module_forms_are_ported_as_it_wrote_them():
    """sphericart-jax's forms, each a module ccshim port once passed over or
    read wrong: one that names only jax.ffi.register_ffi_target (its
    registration loop kept api_version=0 for handlers now typed); a lowering
    that passes ir_constant a Python int in a module without numpy; and
    `from jax.interpreters.mlir import custom_call` (gone from JAX 0.8.0)
    still used by the call sites kept legacy, dropped where none is."""
    from ccshim.port import _python
    said = []
    registers = ("import jax\nfrom .lib import cpu_ops\n\n"
                 "for _name, _value in cpu_ops.registrations().items():\n"
                 "    jax.ffi.register_ffi_target(_name, _value, platform=\"cpu\", api_version=0)\n")
    out = _python.port("m.py", registers, {"k"}, set(), {"cpu_ops": ({"k"}, set())}, said)
    assert said == [] and out is not None
    assert "    jax.ffi.register_ffi_target(_name, _value, platform=\"cpu\")\n" in out, out
    lowers = ("import math\n\n"
              "from jax.interpreters import mlir\n"
              "from jax.interpreters.mlir import custom_call, ir\n\n\n"
              "def rule_cpu(ctx, x, *, n):\n"
              "    return custom_call(\"k\", result_types=[x.type], "
              "operands=[x, mlir.ir_constant(n)]).results\n\n\n"
              "def rule_gpu(ctx, x, *, n):\n"
              "    return custom_call(\"k_gpu\", result_types=[x.type], operands=[x]).results\n")
    out = _python.port("m.py", lowers, {"k"}, {"k_gpu"}, {}, said,
                       kernels={"k": {"cpu": True}, "k_gpu": {"cuda": False}})
    # numpy among the imports of modules not Python's own, after math's
    assert out.startswith("import math\n\nimport numpy\nimport jax\n"
                          "from jax.interpreters import mlir\n"), out
    assert "mlir.ir_constant(numpy.asarray(n))" in out, out
    assert "from jax.interpreters.mlir import ir\n" \
           "# jax.interpreters.mlir.custom_call left JAX's public API; the legacy calls kept use it\n" \
           "from jax._src.interpreters.mlir import custom_call\n" in out, out
    assert "custom_call(\"k_gpu\"" in out
    # with no legacy call left, the import goes
    alone = lowers[:lowers.index("\n\ndef rule_gpu")] + "\n"
    out = _python.port("m.py", alone, {"k"}, set(), {}, said, kernels={"k": {"cpu": True}})
    assert "custom_call" not in out.replace("ffi_lowering", ""), out
    assert "from jax.interpreters.mlir import ir\n" in out, out


@pytest.mark.once
def test_the_comments_above_the_operands_and_the_opaque_bytes_go_with_them():
    """kepler_jax's lowerings: "# The inputs:" above operands= and "# GPU
    specific additional data" above backend_config= move with what they
    describe into the call of the typed lowering, an argument a line (before,
    they were dropped with the legacy arguments)."""
    from ccshim.port import _python
    source = ("from jax.interpreters import mlir\n\n\n"
              "def rule(ctx, x, *, opaque):\n"
              "    return mlir.custom_call(\n"
              "        \"k\",\n"
              "        # Output types\n"
              "        result_types=[x.type],\n"
              "        # The inputs:\n"
              "        operands=[x],\n"
              "        # Layout specification:\n"
              "        operand_layouts=[(0,)],\n"
              "        result_layouts=[(0,)],\n"
              "        # GPU specific additional data\n"
              "        backend_config=opaque\n"
              "    ).results\n")
    said = []
    out = _python.port("m.py", source, {"k"}, set(), {}, said, kernels={"k": {"cuda": True}})
    assert said == [], said
    assert ("        skip_ffi_layout_processing=True\n"
            "    )(\n"
            "        ctx,\n"
            "        # The inputs:\n"
            "        *[x],\n"
            "        # GPU specific additional data\n"
            "        opaque=numpy.frombuffer(opaque, dtype=numpy.uint8))\n") in out, out
    assert "        # Layout specification:\n        operand_layouts=[(0,)],\n" in out, out
