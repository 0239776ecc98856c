"""ccshim.jax's registrations: legacy kernels wrapped and registered with
XLA as typed-FFI targets (register_legacy), or, for comparison, put on XLA's
own legacy path (register_xla_legacy); one registry, since XLA keeps one
target per name."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import jax

from . import _args, _modules
from ._core import (Adapter, Signature, WrapSpec, answers_as_typed_handler, export_platform_name,
                    parse_platform, pycapsule, resolve_kernel, wrap_kernel, wrap_spec,
                    xla_platform_name)

_lock = threading.Lock()
# (name, canonical platform) -> Adapter.  Never emptied: XLA has no
# unregister, so a registered handler must outlive every call.
_registered: dict[tuple[str, str], Adapter] = {}
# Adapters whose registration XLA refused: XLA already asked them its
# metadata query, so they are kept too.
_refused: list[Adapter] = []
# (name, canonical platform) -> kernel address, on XLA's legacy path.
_xla_legacy: dict[tuple[str, str], int] = {}


def _start_backend(export_platform: str) -> None:
    """JAX queues registrations until the platform's backend exists; starting
    it first makes XLA's checks (the metadata handshake, duplicate names)
    happen now, at registration, where errors belong."""
    try:
        jax.devices(export_platform)
    except RuntimeError:
        pass  # no such backend in this process: JAX queues the registration


def register_legacy(name: Any, fn: Any = None, *, platform: str | None = None,
                    api_version: Any = None, signature: str | None = None,
                    opaque_attr: str = "opaque", tuple_operands: str = "flat",
                    traits: int = 0, ffi_version: tuple[int, int] = (0, 1),
                    signatures: Mapping[str, str] | None = None,
                    prefix: str = "", probe: bool = True) -> Any:
    """Wraps a legacy kernel and registers it with JAX as a typed-FFI target.

    ``register_legacy(registrations)`` takes a legacy extension's whole
    ``registrations()`` mapping instead (either shape jaxlib has used, see
    _modules.entries) and registers its legacy entries, each under ``prefix`` + its
    name, with ``api_version`` (one form for all, or a mapping of name to
    form) and ``signatures`` (a mapping of name to signature); it returns a
    Registered, whose ``typed`` lists the typed-FFI entries it left alone.
    How an entry is told typed: its api_version in the new shape; in the old
    shape a dict of stages or a name ending in "_ffi".

    A kernel that answers as a typed-FFI handler is refused (in a mapping:
    listed in ``typed``), since wrapping one as legacy would crash it: with
    ``probe`` (the default) every kernel is called once in a forked child
    with XLA's metadata query (ccshim_probe_typed_handler), which handlers
    built with XLA's FFI binding answer or refuse through the API table and
    legacy kernels do neither.  What this cannot tell: a typed handler that
    ignores its frame entirely looks legacy.

    ``fn`` is what legacy code already has: a PyCapsule (from a legacy
    extension's ``registrations()``), a ctypes function pointer, an integer
    address, a target or symbol name, or a ``(library, symbol)`` pair.
    ``api_version`` is the legacy form (1, 2 or 3).  With a ``signature`` in
    HLO shape syntax, every call is checked: at trace time here, and at run
    time by the adapter.  ``traits`` reach XLA through the handler's
    metadata (JAX drops registration traits for capsules on CPU and refuses
    them on GPU).  Registering the same again returns the same adapter; a
    different kernel under the same name is refused.
    """
    if isinstance(name, Mapping):
        if fn is not None or signature is not None:
            raise TypeError("register_legacy(registrations) takes no kernel or signature of "
                            "its own: pass signatures={name: signature}")
        return _register_all(name, platform=platform, api_version=api_version,
                             signatures=signatures, prefix=prefix, probe=probe,
                             opaque_attr=opaque_attr, tuple_operands=tuple_operands,
                             traits=traits, ffi_version=ffi_version)
    if signatures is not None or prefix:
        raise TypeError("signatures= and prefix= are for register_legacy(registrations)")
    if fn is None:
        raise TypeError("register_legacy(name, fn, ...): the kernel is missing")
    spec = _spec(api_version, platform, signature, opaque_attr, tuple_operands, traits,
                 ffi_version)
    plan = _plan(name, fn, spec, probe)
    with _lock:
        return plan if isinstance(plan, Adapter) else _commit(*plan)


def _spec(api_version, platform, signature, opaque_attr, tuple_operands, traits,
          ffi_version) -> WrapSpec:
    """register_legacy's arguments checked once; layouts are checked by
    legacy_call against each call site."""
    if api_version is None:
        raise TypeError("register_legacy: api_version is required: the kernel's legacy "
                        "form, 1 (original), 2 (status returning) or 3 (unified)")
    return wrap_spec(api_version, "cpu" if platform is None else platform, signature,
                     opaque_attr, tuple_operands, traits, ffi_version, "caller_checks")


def _plan(name: Any, fn: Any, spec: WrapSpec, probe: bool):
    """Everything register_legacy checks before it registers: the name, the
    kernel, what JAX never does, the name's other registrations, and (for a
    new registration) the typed-handler probe.  Returns the adapter already
    registered the same way, or (name, kernel, spec) to commit.  Registers
    nothing."""
    _args.text("name", name)
    if name == "":
        raise ValueError("name is empty; a custom-call target needs a name")
    _refuse_what_jax_never_does(name, spec.signature, spec.options["tuple_operands"])
    kernel = resolve_kernel(fn, spec.platform)
    key = (name, spec.platform)
    with _lock:
        if key in _xla_legacy:
            raise ValueError(
                f"{name!r} is registered on XLA's legacy path (register_xla_legacy) for "
                f"{spec.platform}; XLA keeps one target per name, so register the ccshim side "
                "under another name")
        existing = _registered.get(key)
    if existing is not None:
        same_sig = (existing.signature.text if existing.signature else None) == (
            spec.signature.text if spec.signature is not None else None)
        if (existing.kernel == kernel and existing.api_version == spec.api_version
                and existing.options == spec.options and same_sig):
            return existing
        raise ValueError(
            f"{name!r} is already registered for {spec.platform} with a different "
            "kernel, form, signature or options; XLA cannot replace a "
            "registered handler, so choose another name")
    # Only a new registration pays for the probe (a fork).
    if probe and answers_as_typed_handler(kernel):
        raise ValueError(
            f"{name}: the kernel at {kernel:#x} is a typed-FFI handler, not a legacy "
            "kernel: called in a child process with XLA's metadata query, it answered as "
            "one (or reported an error through the FFI API table), which no legacy kernel "
            "does; register it with jax.ffi.register_ffi_target(name, capsule, "
            "api_version=1)")
    return name, kernel, spec


def _commit(name: str, kernel: int, spec: WrapSpec) -> Adapter:
    """Wraps and registers a planned registration; under _lock.  Another
    thread may have registered the name since it was planned: the same
    registration is that adapter, another one is refused."""
    existing = _registered.get((name, spec.platform))
    if existing is not None:
        if existing.kernel == kernel and existing.api_version == spec.api_version:
            return existing
        raise ValueError(f"{name!r} was registered for {spec.platform} meanwhile, with "
                         "another kernel; XLA cannot replace a registered handler")
    adapter = wrap_kernel(kernel, spec)
    _start_backend(spec.export_platform)
    try:
        jax.ffi.register_ffi_target(name, pycapsule(adapter.handler),
                                    platform=spec.xla_platform, api_version=1)
    except Exception:
        _refused.append(adapter)
        raise
    _registered[(name, spec.platform)] = adapter
    return adapter


def _refuse_what_jax_never_does(name: str, sig: Signature | None, tuple_operands: str) -> None:
    """A JAX call site reaches XLA's legacy path as flat array operands and
    either one array result or a flat tuple of results; a kernel registered
    to be given anything else would get what XLA's path never gives it."""
    if tuple_operands == "nested":
        raise ValueError(
            f"{name}: tuple_operands='nested' would give the kernel tables of operand "
            "pointers, which XLA's legacy path never gives a kernel called from JAX "
            "(jax.ffi.ffi_call operands are arrays, each one in[i]); use 'flat'")
    if sig is None:
        return
    if sig.result_arity == 1:
        raise ValueError(
            f"{name}: the signature's result {sig.text.split('-> ', 1)[1]} is a tuple of one, "
            "which no JAX call site makes: XLA lowers a result list of one to a single "
            "array and hands a legacy kernel that buffer itself as `out`; write the "
            f"result as {sig.results[0]}")
    if sig.nested_result:
        raise ValueError(
            f"{name}: the signature's result nests tuples, which no JAX call site makes "
            "(custom-call results from JAX are arrays, a flat tuple of them on XLA's "
            "legacy path); flatten the result")


class Registered(dict):
    """What register_legacy made of a registrations() mapping: target name
    -> Adapter for each legacy entry, and in ``typed`` the names of the
    typed-FFI entries it left alone (register those with
    jax.ffi.register_ffi_target as they are)."""

    def __init__(self):
        super().__init__()
        self.typed: list[str] = []


def _register_all(registrations: Mapping, *, platform: str | None, api_version: Any,
                  signatures: Mapping[str, str] | None, prefix: str, probe: bool,
                  **options) -> Registered:
    _args.text("prefix", prefix)
    signatures = dict(signatures or {})
    out = Registered()
    entries = _modules.entries(registrations)
    known = {name for _, name, _, _ in entries}
    unknown = sorted(set(signatures) - known)
    if unknown:
        raise ValueError(f"signatures names {unknown}, which registrations() does not have")
    if isinstance(api_version, Mapping):
        unknown = sorted(set(api_version) - known)
        if unknown:
            raise ValueError(f"api_version names {unknown}, which registrations() does not have")
    # Everything is checked before anything is registered.
    for _, name, _, typed in entries:
        if typed and (name in signatures or
                      (isinstance(api_version, Mapping) and name in api_version)):
            raise ValueError(f"{name!r} is a typed-FFI entry of registrations(), not a "
                             "legacy kernel; register it with jax.ffi.register_ffi_target")
    todo = []
    for entry_platform, name, kernel, typed in entries:
        if not isinstance(name, str) or kernel is None:
            raise ValueError(f"registrations() entry {name!r}: expected a name and a kernel, "
                             f"got {type(name).__name__} and {type(kernel).__name__}")
        if not typed and probe:
            # Unmarked but typed: a third party's mapping without jaxlib's marks.
            typed = answers_as_typed_handler(resolve_kernel(kernel, "host"))
        if typed:
            out.typed.append(name)
            continue
        if platform is not None and entry_platform is not None and (
                parse_platform(entry_platform)[0] != parse_platform(platform)[0]):
            continue  # another platform's entry, not asked for
        version = api_version.get(name) if isinstance(api_version, Mapping) else api_version
        if version is None:
            raise ValueError(f"no api_version for the legacy entry {name!r}: registrations() "
                             "does not say which legacy form a kernel has (1, 2 or 3); pass "
                             "api_version=N, or a mapping of name to N")
        try:
            spec = _spec(version, entry_platform or platform or "cpu", signatures.get(name),
                         **options)
            todo.append((name, _plan(prefix + name, kernel, spec, probe=False)))
        except (TypeError, ValueError) as e:  # CcshimError is a ValueError
            kind = TypeError if isinstance(e, TypeError) else ValueError
            raise kind(f"registrations() entry {name!r}: {e}") from None
    # Everything was checked above; only now is anything registered.
    with _lock:
        for name, plan in todo:
            out[name] = plan if isinstance(plan, Adapter) else _commit(*plan)
    return out


def registered(name: str, platform: str | None = None) -> Adapter | None:
    """The adapter registered under ``name`` (for ``platform``, or any)."""
    with _lock:
        if platform is not None:
            return _registered.get((name, parse_platform(platform)[0]))
        for (n, _), adapter in _registered.items():
            if n == name:
                return adapter
    return None


# --- XLA's own legacy path, for side-by-side conformance ------------------------


def register_xla_legacy(name: str, fn: Any, *, platform: str = "cpu") -> int:
    """Registers a kernel with XLA's legacy registry (api_version=0), the path
    JAX has deprecated; for comparing it with ccshim while XLA still runs it.
    A name is on one path only: XLA keeps one target per name."""
    _args.text("name", name)
    canonical, _ = parse_platform(platform)
    kernel = resolve_kernel(fn, canonical)
    key = (name, canonical)
    with _lock:
        if key in _registered:
            raise ValueError(
                f"{name!r} is registered through ccshim (register_legacy) for {canonical}; "
                "XLA keeps one target per name, so register the legacy side under another "
                "name")
        if key in _xla_legacy:
            if _xla_legacy[key] == kernel:
                return kernel
            raise ValueError(f"{name!r} is already on XLA's legacy path for {canonical} "
                             "with another kernel; choose another name")
        _start_backend(export_platform_name(canonical))
        jax.ffi.register_ffi_target(name, pycapsule(kernel),
                                    platform=xla_platform_name(canonical), api_version=0)
        _xla_legacy[key] = kernel
    return kernel
