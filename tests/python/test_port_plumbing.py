"""Removed JAX plumbing written as today's by `ccshim port`, in a module
that registers a lowering (python/ccshim/port/_plumbing.py, ATTRIBUTES and
CALLS: zero-change mode's table written into code; docs/port.md).

A module that uses each removed name is ported, and the ported module is
run on this suite's JAX: each function gives what JAX's own function gives
today, or what zero-change mode's restored one gives (its one-argument
`mlir.aval_to_ir_type`; in a rule, given the rule's lowering context, as
today's JAX takes it), so each edit is proven against JAX, not read back.
"""

import types

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("libcst", reason="ccshim port needs libcst (dev/setup.sh test installs it)")
from jax.interpreters import mlir  # noqa: E402

from test_port import _port  # noqa: E402

MODULE = """\
from jax import core, lax
from jax.interpreters import ad, batching, mlir
import jax._src.interpreters.mlir as private_mlir
from jax._src.lib.mlir.dialects import hlo

p = core.Primitive("p")


def array_type(aval):
    return mlir.aval_to_ir_type(aval)


def array_type_private(aval):
    return private_mlir.aval_to_ir_type(aval)


def zero_tangent(x):
    return ad.Zero.from_value(x)


def zeros(x):
    return lax.zeros_like_array(x)


def shaped(aval):
    return core.raise_to_shaped(aval)


def moved(x):
    return batching.moveaxis(x, 0, 1)


unmapped = batching.not_mapped


def _rule(ctx, x):
    return [hlo.ConvertOp(mlir.aval_to_ir_type(ctx.avals_out[0]), x).result]


p.def_abstract_eval(lambda x: x)


mlir.register_lowering(p, _rule, platform="cpu")
"""


@pytest.fixture(scope="module")
def ported(tmp_path_factory):
    tree = tmp_path_factory.mktemp("plumbing")
    (tree / "plumbing_ext.py").write_text(MODULE)
    done = _port(tree, "--apply")
    assert done.returncode == 0 and done.stderr == "ccshim port: 1 files written\n", done.stderr
    text = (tree / "plumbing_ext.py").read_text()
    for removed in (" core.", "batching.", "ad.Zero.from_value", "zeros_like_array",
                    "raise_to_shaped", "mlir.aval_to_ir_type(aval)"):
        assert removed not in text, (removed, text)
    # in a rule, today's call given the rule's lowering context
    assert "mlir.aval_to_ir_type(ctx.module_context, ctx.avals_out[0])" in text, text
    space: dict = {}
    exec(compile(text, str(tree / "plumbing_ext.py"), "exec"), space)
    return types.SimpleNamespace(**space)


def test_an_arrays_ir_type_is_what_jax_makes_of_its_aval(ported):
    # zero-change mode's restored aval_to_ir_type(aval): JAX's own, given a
    # lowering context with a fresh cache (python/ccshim/legacy/_restored.py)
    own = mlir.aval_to_ir_type
    with mlir.make_ir_context(), mlir.ir.Location.unknown():
        for aval in (jax.core.ShapedArray((2, 3), np.float32), jax.core.ShapedArray((), np.int8),
                     jax.core.ShapedArray((4,), np.bool_)):
            want = str(own(types.SimpleNamespace(aval_to_ir_types_cache={}), aval))
            assert str(ported.array_type(aval)) == want
            assert str(ported.array_type_private(aval)) == want


def test_a_rule_gives_aval_to_ir_type_its_lowering_context(ported):
    x = jax.numpy.arange(6.0, dtype=np.float32).reshape(2, 3)
    assert np.asarray(jax.jit(ported.p.bind)(x)).tolist() == np.asarray(x).tolist()


def test_the_other_removed_names_give_todays_values(ported):
    x = jax.numpy.arange(6.0).reshape(2, 3)
    zero = ported.zero_tangent(x)
    assert type(zero).__name__ == "Zero" and zero.aval == jax.typeof(x).to_tangent_aval()
    assert ported.zeros(x).dtype == x.dtype and not np.asarray(ported.zeros(x)).any()
    assert ported.shaped(jax.typeof(x)) == jax.typeof(x)
    assert np.asarray(ported.moved(x)).tolist() == np.moveaxis(np.asarray(x), 0, 1).tolist()
    assert ported.unmapped is None
    assert ported.p.name == "p" and type(ported.p).__module__.startswith("jax")
