"""Registering the kernels a rewritten artifact needs, and loading it
once they are registered."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._hlo import legacy_of
from ._common import DEFAULT_PREFIX, ArtifactError, union_platforms
from ._read import read


def needed(src: Any, *, prefix: str = DEFAULT_PREFIX, platform: str | None = None) -> list[dict]:
    """The typed targets a rewritten artifact calls, each with the legacy
    target and form it stands for and the platform(s) that run it: of a
    multi-platform artifact, only those whose branch holds a call to it
    (ccshim._branches), as JAX and XLA specialize it for the platform that
    runs it.  ``platform``: only what that platform runs."""
    art = read(src, platform=platform)
    out: dict[str, dict] = {}
    for call in art.calls(prefix):
        if call.kind != "ccshim":
            continue
        legacy, form = legacy_of(call.target, prefix)
        entry = out.setdefault(call.target, {"typed": call.target, "legacy": legacy,
                                             "api_version": form, "platforms": []})
        entry["platforms"] = union_platforms(art.platforms, entry["platforms"], call.platforms)
    return sorted((t for t in out.values() if t["platforms"] or not art.platforms),
                  key=lambda t: t["typed"])


def runs_on(target: dict, platform: str, platforms) -> bool:
    """Whether a target of needed() (or of a rewrite's targets) runs on
    ``platform``, of an artifact's ``platforms``: where they are not known
    (a plain module), wherever it is asked to."""
    return platform in target["platforms"] if platforms else True


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


def platforms_here(platforms) -> tuple[list[str], dict[str, str]]:
    """Of an artifact's platforms (jax.export's names), those this process
    runs kernels on (ccshim knows the platform and JAX has its backend), and
    for each other one why not."""
    import jax

    from .._core import CcshimError, parse_platform
    here, not_here = [], {}
    for p in platforms:
        try:
            parse_platform(p)
        except (ValueError, CcshimError):
            not_here[p] = f"ccshim runs no legacy kernels on {p}"
            continue
        try:
            jax.devices(p)
            here.append(p)
        except RuntimeError:
            not_here[p] = f"this process has no {p} backend"
    return here, not_here


def _default_platform() -> str | None:
    """The platform (jax.export's name) JAX runs a program on here when
    nothing says otherwise."""
    from jax import export as jax_export
    default = getattr(jax_export, "default_export_platform", None)
    return default() if default is not None else None


class Registered(dict):
    """What ``register`` registered: typed name -> Adapter (for the first
    platform served; every platform's is ``ccshim.jax.registered(name,
    platform)``), the platforms served in ``platforms``, and in
    ``not_here`` the artifact's other platforms with the reason each was
    left (a GPU target is asked for only where a GPU is)."""

    def __init__(self):
        super().__init__()
        self.platforms: list[str] = []
        self.not_here: dict[str, str] = {}


def _serving(art, platform: str | None, prefix: str) -> tuple[list[str], dict[str, str]]:
    """The platforms to register or check an artifact's targets for: the one
    asked for; else the one JAX runs it on here by default
    (jax.export.default_export_platform()) where it is the artifact's; else
    those of its platforms this process has.  With none of them here, the
    error names what the artifact needs on a machine that has one, and how
    to register it there."""
    if platform is not None:
        return list(art.platforms), {}  # read() narrowed them to the one asked for
    here, not_here = platforms_here(art.platforms or ("cpu",))
    default = _default_platform()
    if len(here) > 1 and default in here:
        for other in here:
            if other != default:
                not_here[other] = (f"JAX runs it on {default} here by default; pass "
                                   f"platform='{other}' to serve {other}")
        here = [default]
    if not here:
        targets = needed(art, prefix=prefix)
        wanted = "; ".join(f"{t['typed']} (the legacy {t['legacy']}, api_version "
                           f"{t['api_version']})" for t in targets)
        where = art.platforms[0]
        raise ArtifactError(
            f"{art.what}: runs on {', '.join(art.platforms)}, and this process can run none "
            f"of them ({'; '.join(not_here.values())}).  "
            + (f"On a machine with {' or '.join(art.platforms)} it needs {len(targets)} "
               f"target(s) registered: {wanted}; there, ccshim.export.register(artifact, "
               f"kernels, platform='{where}') registers them from that platform's kernels "
               f"(a mapping of legacy name to kernel, or the extension's registrations()), "
               f"or per target ccshim.jax.register_legacy(TYPED, kernel, platform='{where}', "
               "api_version=N)" if targets else
               "It calls no ccshim target: nothing to register there"))
    return here, not_here


def register(src: Any, kernels: Any, *, prefix: str = DEFAULT_PREFIX,
             platform: str | None = None, probe: bool = True) -> Registered:
    """Registers with JAX, through ccshim, every kernel a rewritten artifact
    needs, each under its typed name with its form, for each of the
    artifact's platforms that this process has (or for ``platform``):
    ``kernels`` maps legacy target names to kernels (a PyCapsule, an
    address, a ctypes function, a ``(library, symbol)`` pair), or is an
    extension's ``registrations()``.  Every needed target is looked up
    before anything is registered; one that ``kernels`` lacks is an error
    naming it.  Returns a Registered."""
    from .. import _modules
    from .. import jax as cj
    art = read(src, platform=platform)
    served, not_here = _serving(art, platform, prefix)
    if len(served) > 1 and (not isinstance(kernels, Mapping) or any(
            where is None for where, *_ in _modules.entries(kernels))):
        raise ArtifactError(
            f"{art.what}: runs here on {', '.join(served)}, and these kernels do not say "
            "which platform each is for (a registrations() mapping of jaxlib's newer shape "
            "does); pass platform= and the kernels of that platform")
    plan, missing = [], []
    for t in needed(art, prefix=prefix):
        for where in filter(lambda p: runs_on(t, p, art.platforms), served):
            kernel = _kernel_for(kernels, t["legacy"], where)
            if kernel is None:
                missing.append(f"{t['legacy']} on {where} (api_version {t['api_version']}, "
                               f"as {t['typed']})")
            else:
                plan.append((t, kernel, where))
    if missing:
        raise ArtifactError("no kernel given for the legacy target(s) this artifact needs: "
                            + "; ".join(missing))
    out = Registered()
    out.platforms, out.not_here = served, not_here
    for t, kernel, where in plan:
        adapter = cj.register_legacy(t["typed"], kernel, platform=where,
                                     api_version=t["api_version"], probe=probe)
        out.setdefault(t["typed"], adapter)
    return out


def load(src: Any, *, prefix: str = DEFAULT_PREFIX, platform: str | None = None):
    """The jax.export.Exported of a rewritten artifact, after checking that
    every typed target it calls is registered through ccshim in this
    process, for each of its platforms this process has: one that is not is
    an error naming the legacy target and the call that registers it, where
    XLA would say only that the name is unknown when the program compiles."""
    from .. import jax as cj
    art = read(src, platform=platform)
    served, _ = _serving(art, platform, prefix)
    missing = []
    for t in needed(art, prefix=prefix):
        for where in filter(lambda p: runs_on(t, p, art.platforms), served):
            if cj.registered(t["typed"], where) is None:
                missing.append(f"{t['typed']} on {where} (the legacy {t['legacy']}, "
                               f"api_version {t['api_version']})")
    if missing:
        raise ArtifactError(
            f"{art.what}: needs target(s) not registered through ccshim: {'; '.join(missing)}; "
            "register them with ccshim.export.register(artifact, kernels) or "
            "ccshim.jax.register_legacy(typed name, kernel, api_version=N)")
    return art.as_exported()


def disabled_checks(src: Any, *, prefix: str = DEFAULT_PREFIX) -> list:
    """The jax.export.DisabledSafetyCheck of each ccshim target a rewritten
    artifact calls: what jax.export needs to export again a program that
    calls it (ccshim's targets carry no compatibility guarantee of JAX's)::

        jax.export.export(jax.jit(f), disabled_checks=ce.disabled_checks(art))
    """
    from jax import export as jax_export
    typed = {c.target for c in read(src).calls(prefix) if c.kind == "ccshim"}
    return [jax_export.DisabledSafetyCheck.custom_call(t) for t in sorted(typed)]
