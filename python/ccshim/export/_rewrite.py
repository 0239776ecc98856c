"""Rewriting: each legacy custom call made a typed-FFI call on the target
ccshim wraps it as, its opaque carried as a uint8 attribute."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import Any

from .. import _jax_internals
from .._hlo import rewrite_call
from ._common import DEFAULT_PREFIX, ArtifactError, Call, union_platforms
from ._read import read


@dataclasses.dataclass
class Rewritten:
    """What rewrite made: the artifact's bytes, and per legacy target the
    typed target it became (the manifest)."""
    data: bytes
    kind: str
    platforms: tuple[str, ...]
    targets: list[dict]
    kept: list[Call]
    # A jax.export artifact: the serialization version read and the one
    # written (the running JAX's), and its calling convention, read and
    # written (upgraded where the running JAX no longer supports it).
    serialization: tuple[int | None, int | None] = (None, None)
    calling_convention: tuple[int | None, int | None] = (None, None)

    def manifest(self) -> dict:
        return {"ccshim_rewrite": 1, "kind": self.kind, "platforms": list(self.platforms),
                "targets": self.targets,
                "left_alone": [{"target": c.target, "kind": c.kind} for c in self.kept],
                "serialization_version": {"read": self.serialization[0],
                                          "written": self.serialization[1]},
                "calling_convention_version": {"read": self.calling_convention[0],
                                               "written": self.calling_convention[1]}}


def rewrite(src: Any, *, prefix: str = DEFAULT_PREFIX, platform: str | None = None,
            to: str | None = None, keep: Iterable[str] = (),
            only: Iterable[str] | None = None) -> Rewritten:
    """Every legacy custom call of ``src`` (a path, bytes, an Exported) made a
    typed-FFI call on ``typed_name(target, form, prefix)``.  ``keep``: legacy
    targets to leave alone; ``only``: the legacy targets to rewrite (each
    must occur).  ``to``: the output kind (default: the input's; "export"
    wraps a plain module as a jax.export artifact, which needs ``platform``).
    """
    from .. import _args
    _args.text("prefix", prefix)
    art = read(src, platform=platform)
    keep = set(keep)
    only = set(only) if only is not None else None
    calls = art.custom_calls(prefix)
    present = {c.target for _, c in calls if c.kind == "legacy"}
    for name, chosen in (("keep", keep), ("only", only or set())):
        missing = sorted(chosen - present)
        if missing:
            raise ArtifactError(
                f"{art.what}: {name} names {', '.join(missing)}, which no legacy call of this "
                f"artifact targets (its legacy targets: {', '.join(sorted(present)) or 'none'})")
    targets: dict[str, dict] = {}
    kept: list[Call] = []
    with art.context:
        for op, call in calls:
            if call.kind != "legacy" or call.target in keep or (
                    only is not None and call.target not in only):
                kept.append(call)
                continue
            new = rewrite_call(op, call, prefix, art.what)
            entry = targets.setdefault(new, {
                "legacy": call.target, "typed": new, "api_version": call.api_version,
                "platforms": [], "calls": 0, "signatures": []})
            entry["platforms"] = union_platforms(art.platforms, entry["platforms"],
                                                 call.platforms)
            entry["calls"] += 1
            if call.signature not in entry["signatures"]:
                entry["signatures"].append(call.signature)
        if not art.module.operation.verify():
            raise ArtifactError(f"{art.what}: the rewritten module does not verify")
    if art.exported is not None:
        # jax.export lists the custom calls it was told to accept; the new
        # names stand where the old ones stood.
        from jax import export as jax_export
        renamed = {t["legacy"] for t in targets.values()}
        checks = [c for c in art.exported.disabled_safety_checks
                  if c.is_custom_call() not in renamed]
        checks += [jax_export.DisabledSafetyCheck.custom_call(t) for t in sorted(targets)]
        art.exported = dataclasses.replace(art.exported, disabled_safety_checks=tuple(checks))
    cc_read = getattr(art.exported, "calling_convention_version", None)
    if art.exported is not None:
        art.exported = _calling_convention_upgrade(art)
    kind = to or art.kind
    written = None
    if kind == "export":
        serialization = _jax_internals.serialization()
        written = getattr(serialization, "_SERIALIZATION_VERSION", None)
    return Rewritten(data=art.to_bytes(kind), kind=kind, platforms=art.platforms,
                     targets=sorted(targets.values(), key=lambda t: t["typed"]), kept=kept,
                     serialization=(art.serialization_version, written),
                     calling_convention=(cc_read, getattr(art.exported,
                                                          "calling_convention_version", None)))


# main's first argument, the platform index, tagged as a global constant.
_PLATFORM_INDEX_TAGGED = re.compile(
    r'func\.func public @main\(%arg0: tensor<i\d+> \{[^}]*jax\.global_constant = "_platform_index"')


def _calling_convention_upgrade(art):
    """The artifact at the running JAX's oldest supported calling convention
    when it is older and the upgrade is exact.  8 -> 9 (JAX 0.4.22 and 0.4.23
    wrote 8; JAX from 0.11 supports 9 and 10): version 9 passes effects'
    tokens through main and tags the platform index and the dimension
    variables as global constants.  The releases that wrote 8 (0.4.20 to
    0.4.23) already tagged both in the module: their lowering counted the
    platform index among the dimension variables it tags, so a multi-
    platform module's main begins with an argument tagged
    jax.global_constant = "_platform_index", as 0.4.24 and later write it.
    So a version-8 artifact with no effects whose tags are there is, as it
    stands, the version-9 artifact those releases would have written.
    Otherwise the difference is named."""
    import dataclasses
    exported = art.exported
    try:
        from jax import export as jax_export
        lowest = jax_export.minimum_supported_calling_convention_version
    except (ImportError, AttributeError):
        return exported
    version = exported.calling_convention_version
    if version >= lowest:
        return exported
    if version != 8 or lowest != 9:
        raise ArtifactError(f"{art.what}: calling convention {version}; this JAX supports "
                            f"{lowest} and later, and ccshim upgrades 8 to 9 only")
    effects = [*exported.ordered_effects, *exported.unordered_effects]
    if effects:
        raise ArtifactError(
            f"{art.what}: calling convention 8 with effects ({effects}): version 9 passes "
            "their tokens through main, where 8 made dummy ones; ccshim does not rewrite that")
    text = exported.mlir_module()
    if len(exported.platforms) > 1 and not _PLATFORM_INDEX_TAGGED.search(text):
        raise ArtifactError(
            f"{art.what}: calling convention 8 with platforms {', '.join(exported.platforms)}, "
            "whose main does not tag its platform index argument jax.global_constant = "
            "\"_platform_index\" as version 9 requires (JAX 0.4.20 to 0.4.23 all tagged it); "
            "ccshim does not add the tag")
    if "jax.uses_shape_polymorphism = true" in text and "jax.global_constant" not in text:
        raise ArtifactError(
            f"{art.what}: calling convention 8, shape-polymorphic, with no dimension variable "
            "tagged as a global constant, which version 9 requires; ccshim does not add the "
            "tags")
    return dataclasses.replace(exported, calling_convention_version=9)


