"""XlaBuilder translation rules, run as MLIR lowerings while zero-change
mode is on.

Extensions of JAX's 0.2 to 0.4 years lowered their custom calls with
translation rules: ``rule(c, *operands)`` building the call with XlaBuilder
operations (``xla_client.ops.CustomCallWithLayout`` and a few array ops),
registered in ``jax.interpreters.xla.backend_specific_translations[platform]``
(planet-harmonica 0.1.1) or, as JAX 0.4.14 to 0.4.34 took them, in
``jax._src.interpreters.xla._backend_specific_translations`` with the
signature ``rule(ctx, avals_in, avals_out, *operands)`` (klujax 0.2.10).  JAX
0.4.35 stopped running them, and later releases removed the registries and
XlaBuilder itself.

Here a rule put in either registry becomes the MLIR lowering of its
primitive (``mlir.register_lowering``): it is called with a builder whose
operations emit the StableHLO that XlaBuilder's emitted (reshape, transpose,
constants, tuples, and the custom call, with its layouts, opaque and API
version), on the operands' MLIR values.  The custom call it makes is a legacy
one, which zero-change mode then runs through ccshim like any other.  Shapes
are jaxlib's own ``xla_client.Shape``.  Only the operations such rules use
are there; any other is an error naming it.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from .. import _jax_internals

# XLA's CustomCallApiVersion: a rule may name them; API_VERSION_ORIGINAL is
# XlaBuilder's default.
API_VERSIONS = {"API_VERSION_ORIGINAL": 1, "API_VERSION_STATUS_RETURNING": 2,
                "API_VERSION_STATUS_RETURNING_UNIFIED": 3, "API_VERSION_TYPED_FFI": 4}


class XlaOp:
    """An XlaBuilder operand: the MLIR value(s) it stands for (several for
    a tuple)."""

    def __init__(self, builder: "XlaBuilder", values: list, tuple_: bool = False):
        self.builder, self.values, self.is_tuple = builder, list(values), tuple_

    @property
    def value(self):
        if self.is_tuple:
            raise TypeError("ccshim.legacy: an XlaBuilder tuple used where an array is; "
                            "take its elements with ops.GetTupleElement")
        return self.values[0]


class XlaBuilder:
    """The ``c`` a translation rule is given, in one MLIR lowering."""

    def __init__(self, ctx):
        self.ctx = ctx

    def get_shape(self, op: XlaOp):
        if op.is_tuple:
            return _client().Shape.tuple_shape(tuple(_shape(v) for v in op.values))
        return _shape(op.value)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"ccshim.legacy: XlaBuilder.{name} is not emulated (only what "
                             "custom-call translation rules use: get_shape)")


def _client():
    from jaxlib import xla_client
    return xla_client


def _shape(value):
    """jaxlib's xla_client.Shape of an MLIR array value (row-major, as a
    translation rule's operands were)."""
    ir = _jax_internals.ir()
    t = ir.RankedTensorType(value.type)
    from .._core import numpy_dtype
    from .._hlo import hlo_type
    dims = tuple(t.shape)
    return _client().Shape.array_shape(np.dtype(numpy_dtype(hlo_type(t.element_type))), dims,
                                       tuple(reversed(range(len(dims)))))


def _ir_type(shape):
    mlir = _jax_internals.mlir()
    ir = _jax_internals.ir()
    return ir.RankedTensorType.get(shape.dimensions(), mlir.dtype_to_ir_type(
        np.dtype(shape.element_type())))


def _layout(shape) -> list[int]:
    """A shape's minor-to-major layout; row-major where it has none
    (jaxlib 0.10's Shape always has one, 0.12's says so)."""
    if getattr(shape, "has_layout", lambda: True)():
        return list(shape.layout().minor_to_major())
    return list(reversed(range(len(shape.dimensions()))))


def _constant_literal(c: XlaBuilder, value) -> XlaOp:
    """A constant of ``value`` as XlaBuilder made it: NumPy's array of it
    (a Python int: int64)."""
    array = np.asarray(value)
    mlir = _jax_internals.mlir()
    return XlaOp(c, [mlir.ir_constant(array)])


def _reshape(op: XlaOp, new_sizes, dimensions=None) -> XlaOp:
    if dimensions is not None:
        raise TypeError("ccshim.legacy: ops.Reshape with dimensions= is not emulated")
    ir = _jax_internals.ir()
    hlo = _jax_internals.hlo()
    t = ir.RankedTensorType(op.value.type)
    return XlaOp(op.builder, [hlo.reshape(ir.RankedTensorType.get(tuple(new_sizes),
                                                                  t.element_type), op.value)])


def _transpose(op: XlaOp, permutation) -> XlaOp:
    hlo = _jax_internals.hlo()
    return XlaOp(op.builder, [hlo.transpose(op.value, list(permutation))])


def _get_tuple_element(op: XlaOp, index: int) -> XlaOp:
    if not op.is_tuple:
        raise TypeError("ccshim.legacy: ops.GetTupleElement of an array")
    return XlaOp(op.builder, [op.values[index]])


def _tuple(c: XlaBuilder, elements) -> XlaOp:
    return XlaOp(c, [v for e in elements for v in e.values], tuple_=True)


def _custom_call(c: XlaBuilder, call_target_name, operands, shape, operand_shapes=None,
                 opaque=b"", has_side_effect=False, api_version=1) -> XlaOp:
    mlir_src = _jax_internals.mlir()
    if isinstance(call_target_name, bytes):
        call_target_name = call_target_name.decode()
    results = list(shape.tuple_shapes()) if shape.is_tuple() else [shape]
    operands = list(operands)
    layouts = None
    if operand_shapes is not None:
        if len(operand_shapes) != len(operands):
            raise ValueError(f"ccshim.legacy: CustomCallWithLayout to {call_target_name!r}: "
                             f"{len(operands)} operands, {len(operand_shapes)} operand shapes")
        layouts = [_layout(s) for s in operand_shapes]
    version = API_VERSIONS.get(getattr(api_version, "name", None), None) or int(api_version)
    op = mlir_src.custom_call(
        call_target_name, result_types=[_ir_type(s) for s in results],
        operands=[o.value for o in operands],
        backend_config=opaque if isinstance(opaque, (bytes, str)) else bytes(opaque),
        has_side_effect=has_side_effect, api_version=version,
        operand_layouts=layouts,
        result_layouts=[_layout(s) for s in results] if operand_shapes is not None else None)
    return XlaOp(c, list(op.results), tuple_=shape.is_tuple())


def _custom_call_with_layout(builder, call_target_name, operands, shape_with_layout,
                             operand_shapes_with_layout, opaque=b"", has_side_effect=False,
                             schedule=None, api_version=1):
    return _custom_call(builder, call_target_name, operands, shape_with_layout,
                        list(operand_shapes_with_layout), opaque, has_side_effect, api_version)


def _custom_call_default_layout(builder, call_target_name, operands, shape, opaque=b"",
                                has_side_effect=False, schedule=None, api_version=1):
    return _custom_call(builder, call_target_name, operands, shape, None, opaque,
                        has_side_effect, api_version)


class _Ops(types.SimpleNamespace):
    """xla_client.ops: what custom-call translation rules use."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"ccshim.legacy: xla_client.ops.{name} is not emulated; "
                             "translation rules run through ccshim may use ConstantLiteral, "
                             "Reshape, Transpose, Tuple, GetTupleElement, CustomCall and "
                             "CustomCallWithLayout")


OPS = _Ops(ConstantLiteral=_constant_literal, Constant=_constant_literal, Reshape=_reshape,
           Transpose=_transpose, Tuple=_tuple, GetTupleElement=_get_tuple_element,
           CustomCall=_custom_call_default_layout,
           CustomCallWithLayout=_custom_call_with_layout,
           CustomCallApiVersion=types.SimpleNamespace(
               **{k: types.SimpleNamespace(name=k, value=v) for k, v in API_VERSIONS.items()}))


def lowering(rule, new_style: bool, primitive):
    """The MLIR lowering that runs a translation rule: old style
    ``rule(c, *operands, **params) -> XlaOp``; new style (JAX 0.4.14 on)
    ``rule(ctx, avals_in, avals_out, *operands, **params) -> [XlaOp]``."""
    def lower(ctx, *args, **params):
        c = XlaBuilder(ctx)
        operands = [XlaOp(c, [a]) for a in args]
        if new_style:
            rule_ctx = types.SimpleNamespace(builder=c, module_context=ctx.module_context,
                                             platform=ctx.module_context.platforms[0])
            out = list(rule(rule_ctx, ctx.avals_in, ctx.avals_out, *operands, **params))
        else:
            out = [rule(c, *operands, **params)]
        values = [v for op in out for v in op.values]
        if not getattr(primitive, "multiple_results", False) and len(values) != 1:
            raise TypeError(f"ccshim.legacy: the translation rule of {primitive} gave "
                            f"{len(values)} values for a primitive of one result")
        return values
    lower.__wrapped__ = rule
    return lower


class Rules(dict):
    """One platform's translation rules (``backend_specific_translations
    ['cpu']``): a rule put here becomes its primitive's MLIR lowering."""

    def __init__(self, platform: str | None, new_style: bool):
        super().__init__()
        self.platform, self.new_style = platform, new_style

    def __setitem__(self, primitive, rule) -> None:
        mlir = _jax_internals.mlir()
        super().__setitem__(primitive, rule)
        mlir.register_lowering(primitive, lowering(rule, self.new_style, primitive),
                               platform=self.platform)


class Translations(dict):
    """backend_specific_translations: platform -> Rules, made on first use."""

    def __init__(self, new_style: bool):
        super().__init__()
        self.new_style = new_style

    def __missing__(self, platform: str) -> Rules:
        rules = self[platform] = Rules(platform, self.new_style)
        return rules
