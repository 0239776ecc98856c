"""A custom call as text: its target, its form, its buffers in HLO shape
syntax (with layouts where not row-major), and whether it is legacy,
typed, built in or already rewritten."""

from __future__ import annotations

from collections.abc import Sequence

from ._common import BUILTIN_PREFIXES, BUILTIN_TARGETS, Call, _legacy_of


def _attr(op, name):
    return op.attributes[name] if name in op.attributes else None


def _string(attr) -> bytes:
    from jax._src.lib.mlir import ir
    return ir.StringAttr(attr).value_bytes


def _hlo_type(t) -> str:
    s = str(t)
    if s == "i1":
        return "pred"
    if s.startswith("ui"):
        return "u" + s[2:]
    if s.startswith("i"):
        return "s" + s[1:]
    if s.startswith("complex<"):
        return {"complex<f32>": "c64", "complex<f64>": "c128"}.get(s, s)
    return s.lower()


def _shape_text(t, layout: Sequence[int] | None) -> str:
    from jax._src.lib.mlir import ir
    if "token" in str(t):
        return "token[]"
    try:
        tup = ir.TupleType(t)
    except (ValueError, TypeError):
        tup = None
    if tup is not None:
        return "(" + ", ".join(_shape_text(tup.get_type(i), None)
                               for i in range(tup.num_types)) + ")"
    ranked = ir.RankedTensorType(t)
    dims = ",".join("?" if ir.ShapedType.is_dynamic_size(d) else str(d) for d in ranked.shape)
    text = f"{_hlo_type(ranked.element_type)}[{dims}]"
    rank = ranked.rank
    if layout is not None and list(layout) != list(reversed(range(rank))):
        text += "{" + ",".join(map(str, layout)) + "}"
    return text


def _layouts(op, name) -> list[list[int]] | None:
    from jax._src.lib.mlir import ir
    attr = _attr(op, name)
    if attr is None:
        return None
    return [[int(v) for v in ir.DenseIntElementsAttr(a)] for a in ir.ArrayAttr(attr)]


def _describe_call(op, prefix: str) -> Call:
    from jax._src.lib.mlir import ir
    target = _string(op.attributes["call_target_name"]).decode(errors="replace")
    version_attr = _attr(op, "api_version")
    # StableHLO's default: API_VERSION_ORIGINAL.
    api_version = int(ir.IntegerAttr(version_attr).value) if version_attr is not None else 1
    config = _attr(op, "backend_config")
    typed = api_version == 4 or "mhlo.backend_config" in op.attributes
    opaque = 0
    if config is not None and not typed:
        try:
            opaque = len(_string(config))
        except (ValueError, TypeError):
            typed = True  # a dictionary backend_config is typed-FFI attributes
    in_layouts = _layouts(op, "operand_layouts") or [None] * len(op.operands)
    out_layouts = _layouts(op, "result_layouts") or [None] * len(op.results)
    operands = ", ".join(_shape_text(v.type, lay) for v, lay in zip(op.operands, in_layouts))
    results = [_shape_text(v.type, lay) for v, lay in zip(op.results, out_layouts)]
    result = results[0] if len(results) == 1 else "(" + ", ".join(results) + ")"
    side = _attr(op, "has_side_effect")
    aliases = _attr(op, "output_operand_aliases")
    legacy = _legacy_of(target, prefix)
    if legacy is not None and typed:
        kind = "ccshim"
    elif typed:
        kind = "typed"
    elif target in BUILTIN_TARGETS or target.startswith(BUILTIN_PREFIXES):
        kind = "builtin"
    else:
        kind = "legacy"
    return Call(target=target, kind=kind, api_version=api_version,
                signature=f"({operands}) -> {result}", opaque_bytes=opaque,
                has_side_effect=bool(ir.BoolAttr(side).value) if side is not None else False,
                aliases=len(ir.ArrayAttr(aliases)) if aliases is not None else 0,
                location=str(op.location), legacy_target=legacy[0] if legacy else None)
