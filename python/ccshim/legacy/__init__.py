"""Zero-change mode: an extension that registers legacy custom-call targets
and lowers legacy calls runs through ccshim without a line of it changed.

    import ccshim.legacy          # before the extension is imported
    import veros                  # registers with api_version=0, lowers with
                                  # mlir.custom_call (api_version 2)

or, with not even the entry script edited, ``ccshim legacy [--strict] --
python -m pytest ...`` / ``python -m ccshim.legacy [--strict] -m pytest
...`` (ccshim/_legacy_cmd.py; docs/legacy.md).

Two interception points, both in JAX:

* registration: ``jax.ffi.register_ffi_target(name, fn, platform,
  api_version=0)`` (what mpi4jax and veros call) and
  ``register_custom_call_target`` of ``jaxlib.xla_client`` and, to JAX 0.5,
  ``jax.lib.xla_client`` (celerite2's) record the kernel instead of handing
  it to XLA's legacy registry; typed registrations (api_version >= 1), and
  legacy ones for a platform ccshim runs no kernels on (tpu), pass through
  untouched;
* compilation: ``jax._src.compiler.compile_or_get_cached``, which every
  jitted function and every jax.export artifact goes through with its
  StableHLO module.  Before XLA sees the module, each legacy custom call
  (api_version 1-3) to a recorded target is rewritten in place to a
  typed-FFI call on ``ccshim.vN.TARGET``, with ``ccshim rewrite``'s own
  engine (its opaque carried as the adapter's uint8 attribute), and that
  target is registered from the recorded kernel, wrapped for form N, the
  first time a call needs it.

Checks without changing the extension: ``signature(target, text)`` gives a
recorded target a signature (ccshim/signature.h), with which it is wrapped
the first time a call needs it, so that every call is checked before the
kernel runs (veros's tdma: its ``s64[1]`` operands tied to its buffers'
dims, ``f64[...n[0],s[0]]``).

Strict mode (``enable(strict=True)``, or ``CCSHIM_LEGACY=strict`` in the
environment before ``import ccshim.legacy``) makes a legacy call that would
still reach XLA an error naming it: how a test proves that an extension
would survive the removal of XLA's legacy path.  With CCSHIM_LEGACY_REPORT
naming a file (``ccshim legacy --report FILE``), each process adds to it a
line for each typed target it registers, ``REPORT_FIELDS`` tab-separated:
which kernels a test suite ran through ccshim, over all its processes.

The custom-call plumbing JAX has removed since (``jax.lib.xla_client``,
``jaxlib.hlo_helpers.custom_call``, ``jax.core.Primitive``, ...) is put
back while the mode is on: ccshim/legacy/_restored.py, whose table is in
docs/legacy.md.

JAX internals touched: ``jax.ffi.register_ffi_target`` and the
``register_custom_call_target`` of each xla_client module (replaced by
wrappers), and ``jax._src.compiler.compile_or_get_cached`` (wrapped; its
first two parameters, the backend and the ir.Module, are the same from JAX
0.5 to 0.12); the restored names (``_restored``).  ``disable()`` puts them
back.
"""

from __future__ import annotations

import importlib
import os
import threading
from typing import Any

from .. import _jax_internals
from .._hlo import DEFAULT_PREFIX, describe_call, rewrite_call, walk
from .._legacy_cmd import REPORT_FIELDS, report_file

__all__ = ["enable", "disable", "enabled", "recorded", "wrapped", "signature",
           "restore_plumbing", "LegacyCallError", "REPORT_FIELDS"]


class LegacyCallError(RuntimeError):
    """Strict mode: a legacy custom call would have reached XLA."""


_lock = threading.Lock()
_state: dict[str, Any] = {"on": False, "strict": False, "originals": None}
# (canonical platform, name) -> the kernel as registered (capsule, address)
_kernels: dict[tuple[str, str], Any] = {}
# typed targets registered so far: (platform, typed name)
_wrapped: set[tuple[str, str]] = set()
# (canonical platform, name) -> the signature to wrap it with; and the
# targets wrapped so far, which a signature can no longer reach
_signatures: dict[tuple[str, str], str] = {}
_wrapped_targets: set[tuple[str, str]] = set()


def signature(target: str, text: str, platform: str = "cpu") -> None:
    """Wraps the extension's ``target`` with the signature ``text``, checked
    on every call (parsed now: a bad one raises here).  Said before the
    first call to the target compiles; after it, refused, since that
    target is already registered without it."""
    from .. import _args
    from .._core import Signature, parse_platform
    _args.text("target", target)
    Signature(text)
    canonical = parse_platform(platform)[0]
    with _lock:
        if (canonical, target) in _wrapped_targets:
            raise ValueError(f"ccshim.legacy: {target!r} on {canonical} was already wrapped, "
                             "without this signature, when a call to it compiled; give the "
                             "signature before the first call")
        _signatures[(canonical, target)] = text


def recorded() -> dict[tuple[str, str], Any]:
    """The legacy registrations intercepted so far: (platform, name) -> kernel."""
    return dict(_kernels)


def wrapped() -> list[tuple[str, str]]:
    """The typed targets registered so far for legacy calls that compiled:
    (platform, "ccshim.vN.TARGET"), sorted."""
    return sorted(_wrapped)


def enabled() -> bool:
    return _state["on"]


def enable(strict: bool | None = None) -> None:
    """Installs the interceptions and puts back the removed plumbing (once);
    ``strict`` as documented above (None: keep the current setting,
    initially CCSHIM_LEGACY=strict)."""
    import jax.ffi
    compiler = _jax_internals.compiler()
    from . import _restored
    with _lock:
        if strict is not None:
            _state["strict"] = bool(strict)
        if _state["on"]:
            return
        register, compile_ = jax.ffi.register_ffi_target, compiler.compile_or_get_cached

        def recorder(passthrough, default_version):
            """``passthrough``'s replacement: a legacy registration recorded,
            a typed one given to ``passthrough``."""
            def record(name, fn, platform="cpu", api_version=default_version, **kwargs):
                if isinstance(name, bytes):
                    name = name.decode()
                if api_version != 0:
                    return passthrough(name, fn, platform, api_version, **kwargs)
                from .._core import parse_platform
                if kwargs:
                    raise TypeError(f"ccshim.legacy: a legacy registration of {name!r} (api_version"
                                    f"=0) with {sorted(kwargs)}, which a legacy registration "
                                    "does not take")
                try:
                    canonical = parse_platform(platform)[0]
                except ValueError:
                    # a platform ccshim runs no kernels on (tpu, sycl): its
                    # registration is XLA's, as without the mode (Enzyme-JAX
                    # registers for tpu beside cpu and cuda)
                    return passthrough(name, fn, platform, api_version, **kwargs)
                _kernels[(canonical, name)] = fn
                return None
            return record

        def compile_or_get_cached(backend, computation, *args, **kwargs):
            _rewrite_module(computation, backend.platform)
            return compile_(backend, computation, *args, **kwargs)

        patches = [(jax.ffi, "register_ffi_target", recorder(register, 1)),
                   (compiler, "compile_or_get_cached", compile_or_get_cached)]
        # XLA's own legacy registry, under its names of every JAX release:
        # jaxlib.xla_client (all of them) and jax.lib.xla_client (to 0.5).
        # jax.ffi.register_ffi_target calls it: a typed registration passes
        # through each wrapper to the function that wrapper replaced.
        for client in _xla_clients():
            patches.append((client, "register_custom_call_target",
                            recorder(client.register_custom_call_target, 0)))
        _state["originals"] = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in patches]
        for owner, attr, value in patches:
            setattr(owner, attr, value)
        # jax.lib.xla_client's, where JAX no longer has it: api_version 0 by default
        _restored.install(recorder(register, 0))
        _state["on"] = True


def disable() -> None:
    """Puts JAX's own functions back and takes back the restored plumbing
    (the recorded kernels stay)."""
    from . import _restored
    with _lock:
        if not _state["on"]:
            return
        _restored.uninstall()
        for owner, attr, value in reversed(_state["originals"]):
            setattr(owner, attr, value)
        _state["on"] = False


def restore_plumbing(register: Any) -> None:
    """Puts back only the removed plumbing, with no interception: what a
    legacy build registers through the restored register_custom_call_target
    goes to ``register(name, fn, platform="cpu", api_version=0)``
    (conform's legacy side, where XLA's own legacy path runs the kernel)."""
    from . import _restored
    with _lock:
        _restored.install(register)


def _xla_clients() -> list:
    """The xla_client modules of the running JAX that still have
    register_custom_call_target."""
    found = []
    for name in ("jaxlib.xla_client", "jax.lib.xla_client"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "register_custom_call_target") and module not in found:
            found.append(module)
    return found


def _rewrite_module(module, backend_platform: str) -> None:
    """Every legacy call to a recorded target made typed, in place; in
    strict mode, any other legacy call refused."""
    from .._core import parse_platform
    platform = parse_platform(backend_platform)[0]
    left = []
    with module.context:
        ops = [op for op in walk(module.operation) if op.name == "stablehlo.custom_call"]
        for op in ops:
            call = describe_call(op, DEFAULT_PREFIX)
            if call.kind != "legacy":
                continue
            fn = _kernels.get((platform, call.target))
            if fn is None:
                left.append(call)
                continue
            typed = rewrite_call(op, call, DEFAULT_PREFIX, "ccshim.legacy")
            _ensure_registered(typed, call.target, fn, platform, call.api_version)
    if left and _state["strict"]:
        names = ", ".join(sorted({f"{c.target} (api_version {c.api_version})" for c in left}))
        raise LegacyCallError(
            f"ccshim.legacy (strict): legacy custom call(s) to {names} would reach XLA's "
            f"legacy path on {backend_platform}: no registration of "
            f"{'them' if len(left) > 1 else 'it'} went through jax.ffi.register_ffi_target("
            "..., api_version=0) after ccshim.legacy was enabled")


def _ensure_registered(typed: str, target: str, fn: Any, platform: str,
                       api_version: int) -> None:
    key = (platform, typed)
    if key in _wrapped:
        return
    from .. import jax as cj
    with _lock:
        _wrapped_targets.add((platform, target))
        text = _signatures.get((platform, target))
    cj.register_legacy(typed, fn, platform=platform, api_version=api_version, signature=text)
    _wrapped.add(key)
    report = report_file()
    if report:
        line = "\t".join(map(str, (os.getpid(), platform, typed, target, api_version)))
        try:  # one write of one short line, appended: whole beside other processes'
            with open(report, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        except OSError as e:
            raise OSError(e.errno, f"ccshim.legacy: cannot add {typed} to the report "
                                   f"CCSHIM_LEGACY_REPORT={report}: {e.strerror}") from e


if os.environ.get("CCSHIM_LEGACY", "").lower() not in ("0", "off", "no"):
    enable(strict=os.environ.get("CCSHIM_LEGACY", "").lower() == "strict")
