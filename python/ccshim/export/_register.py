"""Registering the kernels a rewritten artifact needs, and loading it
once they are registered."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._common import DEFAULT_PREFIX, ArtifactError, _legacy_of
from ._read import read


def needed(src: Any, *, prefix: str = DEFAULT_PREFIX, platform: str | None = None) -> list[dict]:
    """The typed targets a rewritten artifact calls, each with the legacy
    target and form it stands for and the platform(s) it runs on."""
    art = read(src, platform=platform)
    out: dict[str, dict] = {}
    for call in art.calls(prefix):
        if call.kind == "ccshim":
            legacy, form = _legacy_of(call.target, prefix)
            out.setdefault(call.target, {"typed": call.target, "legacy": legacy,
                                         "api_version": form, "platforms": list(art.platforms)})
    return sorted(out.values(), key=lambda t: t["typed"])


def _kernel_for(kernels: Any, legacy: str, platform: str):
    """The kernel ``kernels`` gives for a legacy target, or None: a mapping
    of name to kernel, a registrations() mapping in jaxlib's newer shape
    ({platform: [(name, capsule, api_version)]}), or a function of the name."""
    from .. import _modules
    if callable(kernels) and not isinstance(kernels, Mapping):
        return kernels(legacy)
    if not isinstance(kernels, Mapping):
        raise TypeError("kernels must be a mapping of legacy target name to kernel, a "
                        "registrations() mapping, or a function of the name; got "
                        f"{type(kernels).__name__}")
    return _modules.entry(kernels, legacy, platform)


def register(src: Any, kernels: Any, *, prefix: str = DEFAULT_PREFIX,
             platform: str | None = None, probe: bool = True) -> dict:
    """Registers with JAX, through ccshim, every kernel a rewritten artifact
    needs, each under its typed name with its form: ``kernels`` maps legacy
    target names to kernels (a PyCapsule, an address, a ctypes function, a
    ``(library, symbol)`` pair), or is an extension's ``registrations()``.
    Every needed target is looked up before anything is registered; one
    that ``kernels`` lacks is an error naming it.  Returns typed name ->
    Adapter."""
    from .. import jax as cj
    plan, missing = [], []
    for t in needed(src, prefix=prefix, platform=platform):
        where = platform or (t["platforms"][0] if len(t["platforms"]) == 1 else None)
        if where is None:
            raise ArtifactError(f"{t['typed']}: the artifact runs on "
                                f"{', '.join(t['platforms']) or 'an unknown platform'}; "
                                "pass platform= to say which kernels these are")
        kernel = _kernel_for(kernels, t["legacy"], where)
        if kernel is None:
            missing.append(f"{t['legacy']} (api_version {t['api_version']}, as {t['typed']})")
        else:
            plan.append((t, kernel, where))
    if missing:
        raise ArtifactError("no kernel given for the legacy target(s) this artifact needs: "
                            + "; ".join(missing))
    return {t["typed"]: cj.register_legacy(t["typed"], kernel, platform=where,
                                           api_version=t["api_version"], probe=probe)
            for t, kernel, where in plan}


def load(src: Any, *, prefix: str = DEFAULT_PREFIX, platform: str | None = None):
    """The jax.export.Exported of a rewritten artifact, after checking that
    every typed target it calls is registered through ccshim in this
    process: one that is not is an error naming the legacy target and the
    call that registers it, where XLA would say only that the name is
    unknown when the program compiles."""
    from .. import jax as cj
    art = read(src, platform=platform)
    missing = []
    for t in needed(art, prefix=prefix):
        for where in t["platforms"] or ["cpu"]:
            if cj.registered(t["typed"], where) is None:
                missing.append(f"{t['typed']} on {where} (the legacy {t['legacy']}, "
                               f"api_version {t['api_version']})")
    if missing:
        raise ArtifactError(
            f"{art.what}: needs target(s) not registered through ccshim: {'; '.join(missing)}; "
            "register them with ccshim.export.register(artifact, kernels) or "
            "ccshim.jax.register_legacy(typed name, kernel, api_version=N)")
    return art.as_exported()
