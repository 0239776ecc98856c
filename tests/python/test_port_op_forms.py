"""The other forms of a legacy call site (docs/port.md, "Call sites";
python/ccshim/port/_typed_call.py): a stablehlo.CustomCallOp built by hand,
as Enzyme-JAX and jax-triton build theirs, and jax.ffi.ffi_call with
custom_call_api_version and legacy_backend_config, as flash-attn-jax calls
its kernels.

tests/fixtures/port/op_forms is a legacy CPU extension with one of each: a
CustomCallOp (API version 1, written as ir.IntegerAttr.get) that lays its
operand and result out column-major over a kernel that works in memory
order, an ffi_call (API version 1, a tuple result) batched by vmap, and
JAX's own custom_call with its result aliasing an operand, in a rule that
returns its .results (ported to ffi_lowering, the alias kept) and in one
that uses its op (typed in place, as jaxdecomp's reshapes of it).
Ported, each call is typed in place; built by its own build and run in a
Python where ccshim cannot be imported, it gives the bytes the unported
build gives on XLA's legacy path, on JAX 0.10.2 and 0.12.0.1 (each suite's),
and XLA's dump shows each call typed, its layouts as they were.
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
from test_port_layouts import legacy_and_ported

PYTHON = pathlib.Path(sys.executable)    # the suite's venv's

RUN = """\
import json
import numpy as np
import jax
import op_forms

x = np.arange(12, dtype=np.float32).reshape(3, 4)
(y,) = jax.jit(lambda x: op_forms.affine(2.5, x))(x)
sums, total = jax.jit(op_forms.cumsum)(x[0])
rows, totals = jax.jit(jax.vmap(op_forms.cumsum))(x)
(bumped,) = jax.jit(op_forms.bump)(x)
(flat,) = jax.jit(op_forms.bump_flat)(x)
print(json.dumps({"affine": np.asarray(y).tolist(), "cumsum": np.asarray(sums).tolist(),
                  "total": float(total), "rows": np.asarray(rows).tolist(),
                  "totals": np.asarray(totals).tolist(), "bump": np.asarray(bumped).tolist(),
                  "bump_flat": np.asarray(flat).tolist()}))
"""


def _run(tree: pathlib.Path, tmp_path: pathlib.Path, name: str) -> tuple[dict, list[str]]:
    out, lines = project_ports.built_run(tree, tmp_path, name, RUN, python=PYTHON)
    calls = [line for line in lines if 'custom_call_target="op_forms_' in line]
    return json.loads(out.strip().splitlines()[-1]), calls


def test_a_custom_call_op_and_a_legacy_ffi_call_are_typed_and_give_the_legacy_bytes(tmp_path):
    """On each suite's JAX (0.10.2 and 0.12.0.1), the fixture built by that
    suite's Python."""
    legacy_tree, tree = legacy_and_ported("op_forms", tmp_path)
    ops = (tree / "src" / "op_forms" / "ops.py").read_text()
    assert "        backend_config=ir.DictAttr.get({}),\n" \
           "        api_version=ir.IntegerAttr.get(i32_type, 4),\n" in ops, ops
    assert '        vmap_method="sequential",\n    )(np.int32(x.size), x)\n' in ops, ops
    assert "custom_call_api_version=" not in ops and "legacy_backend_config=" not in ops
    # JAX's own custom_call: where the rule returns its .results, ffi_lowering
    # with its aliases; where its op is used, typed in place
    assert "        operand_output_aliases={1: 0},\n        skip_ffi_layout_processing=True,\n" \
           "    )(ctx, *[mlir.ir_constant(np.int32(np.prod(t.shape))), x])\n" in ops, ops
    assert "        operand_output_aliases={1: 0},\n        backend_config={},\n" \
           "        api_version=4,\n    )\n" in ops, ops
    assert _port(tree).stdout == ""
    ported, calls = _run(tree, tmp_path, "ported")
    legacy, legacy_calls = _run(legacy_tree, tmp_path, "legacy")
    assert ported == legacy, (ported, legacy)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    column_major = 2.5 * x + np.arange(12, dtype=np.float32).reshape(3, 4, order="F")
    assert ported["affine"] == column_major.tolist()
    assert ported["cumsum"] == np.cumsum(x[0]).tolist() and ported["total"] == x[0].sum()
    assert ported["rows"] == np.cumsum(x, axis=1).tolist()
    assert ported["totals"] == x.sum(axis=1).tolist()
    assert ported["bump"] == (x + 1).tolist() and ported["bump_flat"] == (x + 1).ravel().tolist()
    # XLA's own dump: every call typed where each was legacy (the batched
    # call too), the CustomCallOp's layouts the same
    targets = {re.search(r'custom_call_target="(\w+)"', c).group(1) for c in calls}
    assert targets == {"op_forms_affine", "op_forms_cumsum", "op_forms_bump"}, calls
    assert all("api_version=API_VERSION_TYPED_FFI" in line for line in calls), calls
    assert legacy_calls and not any("API_VERSION_TYPED_FFI" in line
                                    for line in legacy_calls), legacy_calls
    affine = {line.split("=", 1)[1].split("custom-call(")[0] for line in calls + legacy_calls
              if "op_forms_affine" in line}
    assert affine == {" f32[3,4]{0,1} "}, affine
    # the result aliases the operand in both, through ffi_lowering and in place
    bumps = [line for line in calls + legacy_calls if "op_forms_bump" in line]
    assert len(bumps) >= 4 and all("output_to_operand_aliasing={{}: (1, {})}" in line
                                   for line in bumps), bumps


@pytest.mark.once
def test_a_legacy_ffi_call_whose_function_is_called_elsewhere_is_kept_legacy(tmp_path):
    """On GPU the opaque goes to the call of the function ffi_call makes,
    which the port edits only where it is made: elsewhere, the site is said
    and kept legacy with its target."""
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "port" / "op_forms", tree)
    ops = tree / "src" / "op_forms" / "ops.py"
    text = ops.read_text()
    assert "    return jax.ffi.ffi_call(\n" in text and "    )(np.int32(x.size), x)\n" in text
    ops.write_text(text.replace("    return jax.ffi.ffi_call(\n", "    f = jax.ffi.ffi_call(\n")
                   .replace("    )(np.int32(x.size), x)\n",
                            "    )\n    return f(np.int32(x.size), x)\n"))
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    said = done.stderr.splitlines()
    assert "ccshim port: src/op_forms/ops.py:61: not ported: a custom call (an ffi_call) whose " \
           "function is not called where it is made: kept legacy, its targets held" in said, said
    assert "ccshim port: src/op_forms/cpu_ops.cpp:50: not ported: 'op_forms_cumsum': a " \
           "lowering of it stays legacy (said below): kept legacy with it" in said, said
    assert "custom_call_api_version=1" not in [line[1:].strip() for line in
                                               done.stdout.splitlines() if line[:1] == "-"]
    assert "+        api_version=ir.IntegerAttr.get(i32_type, 4)," in done.stdout.splitlines()
