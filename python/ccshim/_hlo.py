"""The custom calls of an HLO module (StableHLO, in jaxlib's MLIR bindings),
as both ccshim.export (an artifact on disk) and ccshim.legacy (a module about
to be compiled) read and rewrite them: what a call is (its target, form and
buffers in HLO shape syntax), the names of ccshim's typed targets, and a
legacy call made a typed-FFI call on one of them, in place."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from . import _jax_internals

DEFAULT_PREFIX = "ccshim."


OPAQUE_ATTR = "opaque"


# Custom-call targets that XLA or JAX implement themselves: not user kernels,
# never rewritten.  (jax.export's list of stable targets holds these and the
# typed jaxlib kernels; the prefixes are XLA's own namespaces.)
BUILTIN_TARGETS = frozenset({
    "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "annotate_device_placement",
    "shape_assertion", "AllocateBuffer", "LayoutConstraint", "MoveToHost", "MoveToDevice",
    "PartitionId", "ReplicaId", "InspectSharding", "X64Combine", "X64SplitLow",
    "X64SplitHigh", "tpu_custom_call", "mosaic_gpu", "mosaic_gpu_v2", "Eigh", "Qr",
    "ProductOfElementaryHouseholderReflectors", "LuDecomposition", "ApproxTopK", "TopK",
    "tf.call_tf_function",
})


BUILTIN_PREFIXES = ("stablehlo.", "mhlo.", "xla.", "sdy.", "__gpu$", "__cpu$")


class ArtifactError(ValueError):
    """An input ccshim cannot read or rewrite, or an artifact whose targets
    are not registered; the message says what was expected and what came."""


def typed_name(target: str, api_version: int, prefix: str = DEFAULT_PREFIX) -> str:
    """The typed-FFI target a legacy call to ``target`` in form
    ``api_version`` becomes: ``ccshim.v2.lapack_sgetrf``.  Deterministic, so
    that the same legacy call always gets the same name."""
    return f"{prefix}v{api_version}.{target}"


def legacy_of(name: str, prefix: str) -> tuple[str, int] | None:
    """(legacy target, form) of a typed_name, or None."""
    if not name.startswith(prefix + "v"):
        return None
    form, dot, target = name[len(prefix) + 1:].partition(".")
    if not dot or form not in ("1", "2", "3") or not target:
        return None
    return target, int(form)


@dataclasses.dataclass
class Call:
    """One custom call found in an artifact."""
    target: str
    kind: str                 # "legacy", "typed", "builtin", "ccshim" (already rewritten)
    api_version: int
    signature: str            # HLO shape syntax, layouts where not row-major
    opaque_bytes: int         # length of the legacy backend_config
    has_side_effect: bool
    aliases: int              # output/operand alias pairs
    location: str
    legacy_target: str | None = None  # kind "ccshim": the target it stands for
    # the artifact's platforms that reach the call (ccshim._branches); None
    # where not worked out (a module being compiled, a module of no platform)
    platforms: tuple[str, ...] | None = None

    def as_json(self) -> dict:
        return dataclasses.asdict(self)


def attr(op, name):
    return op.attributes[name] if name in op.attributes else None


def string(attr) -> bytes:
    ir = _jax_internals.ir()
    return ir.StringAttr(attr).value_bytes


def hlo_type(t) -> str:
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


def shape_text(t, layout: Sequence[int] | None) -> str:
    ir = _jax_internals.ir()
    if "token" in str(t):
        return "token[]"
    try:
        tup = ir.TupleType(t)
    except (ValueError, TypeError):
        tup = None
    if tup is not None:
        return "(" + ", ".join(shape_text(tup.get_type(i), None)
                               for i in range(tup.num_types)) + ")"
    ranked = ir.RankedTensorType(t)
    dims = ",".join("?" if ir.ShapedType.is_dynamic_size(d) else str(d) for d in ranked.shape)
    text = f"{hlo_type(ranked.element_type)}[{dims}]"
    rank = ranked.rank
    if layout is not None and list(layout) != list(reversed(range(rank))):
        text += "{" + ",".join(map(str, layout)) + "}"
    return text


def layouts(op, name) -> list[list[int]] | None:
    ir = _jax_internals.ir()
    found = attr(op, name)
    if found is None:
        return None
    return [[int(v) for v in ir.DenseIntElementsAttr(a)] for a in ir.ArrayAttr(found)]


def describe_call(op, prefix: str) -> Call:
    ir = _jax_internals.ir()
    target = string(op.attributes["call_target_name"]).decode(errors="replace")
    version_attr = attr(op, "api_version")
    # StableHLO's default: API_VERSION_ORIGINAL.
    api_version = int(ir.IntegerAttr(version_attr).value) if version_attr is not None else 1
    config = attr(op, "backend_config")
    typed = api_version == 4 or "mhlo.backend_config" in op.attributes
    opaque = 0
    if config is not None and not typed:
        try:
            opaque = len(string(config))
        except (ValueError, TypeError):
            typed = True  # a dictionary backend_config is typed-FFI attributes
    in_layouts = layouts(op, "operand_layouts") or [None] * len(op.operands)
    out_layouts = layouts(op, "result_layouts") or [None] * len(op.results)
    operands = ", ".join(shape_text(v.type, lay) for v, lay in zip(op.operands, in_layouts))
    results = [shape_text(v.type, lay) for v, lay in zip(op.results, out_layouts)]
    result = results[0] if len(results) == 1 else "(" + ", ".join(results) + ")"
    side = attr(op, "has_side_effect")
    aliases = attr(op, "output_operand_aliases")
    legacy = legacy_of(target, prefix)
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


def walk(op):
    """Every operation under op, op first, in module order; iterative, so
    that regions nested thousands deep do not exhaust Python's stack."""
    stack = [op]
    while stack:
        op = stack.pop()
        yield op
        children = [child.operation for region in op.regions for block in region
                     for child in block]
        stack.extend(reversed(children))


def rewrite_call(op, call: Call, prefix: str, what: str) -> str:
    ir = _jax_internals.ir()
    import numpy as np
    if call.api_version not in (1, 2, 3):
        raise ArtifactError(f"{what}: {call.location}: the custom call to {call.target!r} has "
                            f"api_version {call.api_version}; a legacy call is 1, 2 or 3")
    for i, v in enumerate(op.operands):
        if "tuple" in str(v.type):
            raise ArtifactError(
                f"{what}: {call.location}: operand {i} of {call.target!r} is a tuple "
                f"({v.type}); a typed-FFI call takes arrays, and XLA would hand the legacy "
                "kernel a nested pointer table that ccshim does not rebuild")
    called = attr(op, "called_computations")
    if called is not None and len(ir.ArrayAttr(called)):
        raise ArtifactError(f"{what}: {call.location}: {call.target!r} has called "
                            "computations, which a legacy kernel cannot have been given")
    new = typed_name(call.target, call.api_version, prefix)
    config = attr(op, "backend_config")
    blob = string(config) if config is not None else b""
    attrs = {}
    if blob:
        attrs[OPAQUE_ATTR] = ir.DenseElementsAttr.get(
            np.frombuffer(blob, np.uint8), type=ir.IntegerType.get_unsigned(8))
    if any("tuple" in str(r.type) for r in op.results):
        op = flatten_tuple_result(op, call, what)
    op.attributes["call_target_name"] = ir.StringAttr.get(new)
    op.attributes["api_version"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4)
    op.attributes["backend_config"] = ir.DictAttr.get(attrs)
    return new


def flatten_tuple_result(op, call: Call, what: str):
    """A custom call whose one result is a flat tuple, as older lowerings
    wrote multiple results (read with get_tuple_element), made a call with
    the tuple's elements as its results: the same buffers, which XLA hands a
    legacy kernel as the same table of pointers."""
    ir = _jax_internals.ir()
    if len(op.results) != 1:
        raise ArtifactError(f"{what}: {call.location}: {call.target!r} returns tuples among "
                            "other results; only one flat tuple result is understood")
    tup = ir.TupleType(op.results[0].type)
    types = [tup.get_type(i) for i in range(tup.num_types)]
    if any("tuple" in str(t) for t in types):
        raise ArtifactError(f"{what}: {call.location}: {call.target!r} returns a nested tuple, "
                            "which a typed-FFI call cannot return")
    users = [use.owner for use in op.results[0].uses]
    for user in users:
        if user.name != "stablehlo.get_tuple_element":
            raise ArtifactError(f"{what}: {call.location}: the tuple {call.target!r} returns "
                                f"is used by {user.name}, not only read element by element")
    names = [a if isinstance(a, str) else a.name for a in op.attributes]
    attributes = {name: op.attributes[name] for name in names}
    with ir.InsertionPoint(op), op.location:
        flat = ir.Operation.create("stablehlo.custom_call", results=types,
                                   operands=list(op.operands), attributes=attributes)
    for user in users:
        index = int(ir.IntegerAttr(user.attributes["index"]).value)
        user.results[0].replace_all_uses_with(flat.results[index])
        user.erase()
    op.erase()
    return flat
