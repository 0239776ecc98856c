"""Legacy calls with a token, as mpi4jax's lowerings made theirs: the token
the last operand and the last result, threaded by JAX through an ordered
effect, so that these calls run in program order among themselves and with
JAX's other ordered effects.  jax.ffi.ffi_call passes no token, so the call
is built here: a primitive whose lowering writes the typed-FFI custom call
(api_version 4) itself, the opaque as the adapter's uint8 attribute.

What a kernel is handed for the token (traced with tests/python/
test_tokens.py across the JAX matrix): on XLA's CPU legacy path NULL in
jaxlib 0.6.2 to 0.8.3, and from 0.9.2 a non-NULL pointer per token operand
and result, distinct, into XLA's buffer allocation; the typed path's token
buffer holds the same, which the adapter forwards.  A kernel that passes
its token through (mpi4jax's do not read it) sees the same on both.

JAX internals touched: jax._src.effects (an ordered, lowerable effect type),
jax._src.interpreters.mlir (custom_call, token_type, TokenSet, and the
lowering context's tokens_in / set_tokens_out), jax.extend.core.Primitive.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import _jax_internals

_primitive = None
_effect = None


def _setup():
    global _primitive, _effect
    if _primitive is not None:
        return _primitive, _effect
    core, effects = _jax_internals.core(), _jax_internals.effects()
    mlir = _jax_internals.mlir()
    from jax.extend.core import Primitive

    class LegacyOrderedEffect(effects.Effect):
        """ccshim's legacy calls that pass a token: one ordered effect."""
        __str__ = lambda self: "ccshim.LegacyOrdered"  # noqa: E731

    effect = LegacyOrderedEffect()
    for kind in (effects.lowerable_effects, effects.ordered_effects,
                 effects.control_flow_allowed_effects):
        kind.add_type(LegacyOrderedEffect)
    prim = Primitive("ccshim_legacy_ordered_call")
    prim.multiple_results = True

    def abstract(*operands, name, results, attrs, api_version):
        return [core.ShapedArray(shape, dtype) for shape, dtype in results], {effect}
    prim.def_effectful_abstract_eval(abstract)

    def lowering(ctx, *operands, name, results, attrs, api_version):
        ir = _jax_internals.ir()
        token = ctx.tokens_in.get(effect)
        result_types = [ir.RankedTensorType.get(aval.shape, mlir.dtype_to_ir_type(aval.dtype))
                        for aval in ctx.avals_out]
        if api_version == 4:  # typed: the opaque as the adapter's uint8 attribute
            config = {key: ir.DenseElementsAttr.get(np.frombuffer(value, np.uint8),
                                                    type=ir.IntegerType.get_unsigned(8))
                      for key, value in attrs}
        else:  # XLA's legacy path: the opaque as the backend config, bytes intact
            config = dict(attrs).get("opaque", b"")
        call = mlir.custom_call(name, result_types=[*result_types, mlir.token_type()],
                                operands=[*operands, token], backend_config=config,
                                has_side_effect=True, api_version=api_version)
        out = list(call.results)
        ctx.set_tokens_out(mlir.TokenSet({effect: out.pop()}))
        return out

    for where in ("cpu", "cuda", "rocm"):
        try:
            mlir.register_lowering(prim, lowering, platform=where)
        except NotImplementedError:  # a platform whose plugin is not installed
            pass
    _primitive, _effect = prim, effect
    return prim, effect


def call(name: str, operands: Sequence[Any], results: Sequence[Any],
         attrs: dict[str, bytes], api_version: int = 4) -> list:
    """Binds one ordered call: ``results`` are the array results' shapes and
    dtypes (the token is the call's own); api_version 4 calls ccshim's typed
    target with ``attrs``, 1-3 XLA's legacy path with attrs["opaque"] as the
    backend config (for side-by-side tests)."""
    prim, _ = _setup()
    return prim.bind(*operands, name=name,
                     results=tuple((tuple(r.shape), np.dtype(r.dtype)) for r in results),
                     attrs=tuple(sorted(attrs.items())), api_version=api_version)
