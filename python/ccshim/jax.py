"""Legacy XLA custom calls in JAX, through ccshim, as typed-FFI calls.

Before (deprecated in JAX, going away in XLA)::

    jax.ffi.register_ffi_target("my_kernel", capsule, platform="cpu", api_version=0)
    y = jax.ffi.ffi_call("my_kernel", out_type, custom_call_api_version=2,
                         legacy_backend_config=descriptor)(x)

With ccshim, the same kernel, untouched::

    import ccshim.jax as cj
    cj.register_legacy("my_kernel", capsule, platform="cpu", api_version=2,
                       signature="(f32[1024]) -> f32[1024]")
    y = cj.legacy_call("my_kernel", out_type, opaque=descriptor)(x)

``legacy_call`` works under ``jit``, ``vmap`` (``vmap_method`` as in
``jax.ffi.ffi_call``, plus ccshim's ``"broadcast"``) and inside
``shard_map``.  The opaque bytes travel as a uint8 array attribute, so binary
descriptors with NUL bytes arrive intact.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, Callable

import jax
import numpy as np
from jax import custom_batching

from . import (Adapter, Signature, WrapSpec, _args, _layouts, _modules, answers_as_typed_handler,
               export_platform_name, parse_platform, resolve_kernel, wrap_kernel, wrap_spec,
               xla_platform_name)

__all__ = ["register_legacy", "legacy_call", "registered", "register_xla_legacy",
           "xla_legacy_call", "Registered"]

_lock = threading.Lock()
# (name, canonical platform) -> Adapter.  Never emptied: XLA has no
# unregister, so a registered handler must outlive every call.
_registered: dict[tuple[str, str], Adapter] = {}
# Adapters whose registration XLA refused: XLA already asked them its
# metadata query, so they are kept too.
_refused: list[Adapter] = []
# (name, canonical platform) -> kernel address, on XLA's legacy path.
_xla_legacy: dict[tuple[str, str], int] = {}


def _start_backend(platform: str) -> None:
    """JAX queues registrations until the platform's backend exists; starting
    it first makes XLA's checks (the metadata handshake, duplicate names)
    happen now, at registration, where errors belong."""
    try:
        jax.devices(export_platform_name(platform))
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
    _start_backend(spec.platform)
    try:
        jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(adapter.handler),
                                    platform=xla_platform_name(spec.platform), api_version=1)
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


# jax.typeof from JAX 0.6; jax.core.get_aval before (removed in 0.10).
_aval = getattr(jax, "typeof", None) or jax.core.get_aval


def _opaque_bytes(opaque: Any, operands: Sequence[Any]) -> bytes:
    if callable(opaque):
        opaque = opaque(*[_aval(x) for x in operands])
    if opaque is None:
        return b""
    if isinstance(opaque, str):
        return opaque.encode()
    if isinstance(opaque, (bytes, bytearray, memoryview)):
        return bytes(opaque)
    if isinstance(opaque, np.ndarray) and opaque.dtype in (np.uint8, np.int8):
        return opaque.tobytes()
    raise TypeError(
        "opaque must be bytes, str, a uint8/int8 numpy array, or a function "
        f"of the operands returning one of these; got {type(opaque).__name__}")


def _describe(shape, dtype) -> str:
    from . import dtype_name, dtype_number
    try:
        name = dtype_name(dtype_number(dtype))
    except TypeError:
        name = str(np.dtype(dtype))
    return f"{name}[{','.join(map(str, shape))}]"


def _check_signature(name: str, sig: Signature, operands, results, multiple,
                     token: bool = False) -> None:
    """pre: no tuple operand (JAX passes none; the adapter checks the leaves).
    ``token``: the call passes a token last on both sides, which the
    signature must list there (``token[]``)."""
    want_operands, want_results = sig.operands, sig.results
    if token:
        # (a token alone is a single result, as mpi4jax's send and barrier return)
        if not (want_operands and want_operands[-1].dtype == "token"
                and want_results and want_results[-1].dtype == "token"
                and (sig.tuple_result or len(want_results) == 1)):
            raise ValueError(f"{name}: ordered=True passes a token as the last operand and "
                             f"takes one as the last result, which the signature {sig} does "
                             "not list (end both sides with token[])")
        want_operands, want_results = want_operands[:-1], want_results[:-1]
        sig_arity = len(want_operands)
    else:
        sig_arity = len(sig.operands)
    if len(operands) != sig_arity:
        raise ValueError(
            f"{name}: the signature {sig} takes {sig_arity} operand(s)"
            f"{' and a token' if token else ''}, the call passes {len(operands)}")
    from . import numpy_dtype
    bound: dict[str, tuple[int, str]] = {}  # dim name -> (size, where it was set)

    def bind(w: str, g: int, what: str, where: str) -> None:
        if w in bound and bound[w][0] != g:
            raise ValueError(f"{name}: {what} is {g}, but {w} is {bound[w][0]} "
                             f"({bound[w][1]}) in the signature {sig}")
        bound.setdefault(w, (g, where))

    def check(side: str, i: int, want, shape, dtype) -> None:
        if want.dtype == "token":
            return
        shape = tuple(shape)
        # Leading dims (`...`) come before the dims written, if any.
        lead = len(shape) - len(want.shape) if want.shape is not None else len(shape)
        fits = np.dtype(dtype) == numpy_dtype(want.dtype) and (
            lead == 0 or (want.leading is not None and lead > 0))
        if fits and want.leading:
            product = int(np.prod(shape[:lead], dtype=np.int64))
            what = ("element count" if want.shape is None
                    else f"product of {lead} leading dim(s)")
            bind(want.leading, product, f"{side} {i}: its {what}", f"the {what} of {side} {i}")
        for d, (w, g) in enumerate(zip(want.shape or (), shape[lead:] if fits else ()), lead):
            if isinstance(w, str):
                bind(w, g, f"{side} {i}: dim {d}", f"dim {d} of {side} {i}")
            elif w != g:
                fits = False
                break
        if not fits:
            raise ValueError(f"{name}: {side} {i}: the signature {sig} expects "
                             f"{want}, got {_describe(shape, dtype)}")

    for i, (x, want) in enumerate(zip(operands, want_operands)):
        aval = _aval(x)
        check("operand", i, want, aval.shape, aval.dtype)
    if token:
        if len(results) != len(want_results):
            raise ValueError(f"{name}: the signature {sig} has {len(want_results)} array "
                             f"result(s) and a token, the call asks for {len(results)}")
        for i, (r, want) in enumerate(zip(results, want_results)):
            check("result", i, want, r.shape, r.dtype)
        return
    # A list of one lowers to a single array, as one ShapeDtypeStruct does.
    if sig.tuple_result and not multiple:
        raise ValueError(
            f"{name}: the signature's result is a tuple, so pass result_shape_dtypes "
            "as a sequence")
    if multiple and not sig.tuple_result and len(results) != 1:
        raise ValueError(
            f"{name}: the signature's result is one array; the call asks for "
            f"{len(results)} results")
    if len(results) != len(sig.results):
        raise ValueError(f"{name}: the signature {sig} has {len(sig.results)} "
                         f"result(s), the call asks for {len(results)}")
    for i, (r, want) in enumerate(zip(results, sig.results)):
        check("result", i, want, r.shape, r.dtype)


def _broadcast_all(axis_size: int, operands: Sequence[Any], batched: Sequence[bool]) -> list:
    return [x if b else jax.numpy.broadcast_to(x, (axis_size, *np.shape(x)))
            for x, b in zip(operands, batched)]


def _grown(name: str, grown: list[int] | None, operands: Sequence[Any],
           batched: Sequence[bool], full: Sequence[Any]) -> list[int]:
    """The batch dims each operand has gained after one more batch level:
    ``operands`` as the vmap rule has them (the batch axis in front of the
    ``batched`` ones), ``full`` what batch_operands made of them.  An
    operand batch_operands left at its rank (a size recomputed, a shape
    array rebuilt) gains none, and keeps its layout."""
    out = []
    for i, (before, x, b, y) in enumerate(zip(grown or [0] * len(full), operands, batched,
                                              full)):
        row = np.ndim(x) - bool(b)
        added = np.ndim(y) - row
        if added < 0:
            raise ValueError(f"{name}: batch_operands returned operand {i} of rank "
                             f"{np.ndim(y)} for one of rank {row}; a batch adds dims in "
                             "front, never removes them")
        out.append(before + added)
    return out


def _call_site(name: str, result_shape_dtypes: Any, vmap_method: str | None,
               layouts: tuple[Any, Any], opaque: Any, batch_operands: Callable | None,
               bind: Callable) -> Callable[..., Any]:
    """A callable of the operands that calls bind(operands, result types,
    multiple, input layouts, output layouts) once, or under
    vmap_method="broadcast" once per batch, on the whole batch (a
    custom_vmap rule), with the layouts for the batch (_layouts.for_batch)."""
    multiple = isinstance(result_shape_dtypes, Sequence)
    results = list(result_shape_dtypes) if multiple else [result_shape_dtypes]
    if batch_operands is not None and not callable(batch_operands):
        raise TypeError(f"{name}: batch_operands must be a function, got "
                        f"{type(batch_operands).__name__}")

    def call_with(operands, types, grown, depth):
        # grown: the batch dims each operand gained; every result gains depth
        avals = [_aval(x) for x in operands]
        in_layouts = _layouts.for_batch(name, "input", layouts[0], [a.shape for a in avals],
                                        grown or [0] * len(avals), avals)
        out_layouts = _layouts.for_batch(name, "output", layouts[1], [t.shape for t in types],
                                         [depth] * len(types), avals, one=not multiple)
        return bind(operands, types, multiple, in_layouts, out_layouts)

    if vmap_method != "broadcast":
        if batch_operands is not None:
            raise ValueError(f"{name}: batch_operands is for vmap_method='broadcast' only")
        return lambda *operands: call_with(operands, results, None, 0)
    if batch_operands is None and not callable(opaque):
        raise ValueError(
            f"{name}: vmap_method='broadcast' makes one call on the whole batch, but "
            "nothing says how that call differs from one row's: a kernel that reads its "
            "sizes from the opaque or from an operand would read one row's and leave the "
            "rest of the batch unwritten.  Pass opaque as a function of the operands' "
            "shapes, and/or batch_operands(axis_size, operands, batched) returning the "
            "batch's operands (a batch-size operand set to the batch); or use "
            "vmap_method='sequential'")
    widen = batch_operands or _broadcast_all

    def make(types, grown, depth):
        @custom_batching.custom_vmap
        def call(*operands):
            return call_with(operands, types, grown, depth)

        @call.def_vmap
        def rule(axis_size, in_batched, *operands):
            given = widen(axis_size, list(operands), list(in_batched))
            if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
                raise TypeError(f"{name}: batch_operands returned {type(given).__name__}; "
                                f"expected a list of the {len(operands)} operand(s), each "
                                "with the batch axis in front")
            full = list(given)
            if len(full) != len(operands):
                raise ValueError(f"{name}: batch_operands returned {len(full)} operand(s) "
                                 f"for {len(operands)}")
            batched = [jax.ShapeDtypeStruct((axis_size, *t.shape), t.dtype) for t in types]
            out = make(batched, _grown(name, grown, operands, in_batched, full),
                       depth + 1)(*full)
            return out, ([True] * len(types) if multiple else True)

        return call

    return make(results, None, 0)


def legacy_call(name: str, result_shape_dtypes: Any, *, opaque: Any = b"",
                vmap_method: str | None = None, has_side_effect: bool = False,
                input_output_aliases: dict[int, int] | None = None,
                input_layouts: Sequence[Any] | None = None, output_layouts: Any = None,
                batch_operands: Callable | None = None,
                platform: str | None = None, ordered: bool = False) -> Callable[..., Any]:
    """A legacy call site, made typed: returns a callable of the operands.

    The arguments are ``jax.ffi.ffi_call``'s, with the same meaning, plus
    ``opaque``, the old backend config: bytes (NULs welcome), str, a uint8
    array, or a function of the operands' abstract values returning bytes
    (evaluated at trace time, and again for the batched shapes under
    ``vmap_method="broadcast"``).  It is passed as the adapter's opaque
    attribute, a uint8 array.  A result list of one gives the kernel that
    buffer itself as ``out``, as XLA's legacy path does.

    ``input_layouts``/``output_layouts`` are ffi_call's (per buffer: None
    for row-major, a ``Layout``, or dimension numbers major-to-minor); XLA
    hands the kernel buffers in those layouts.  Either may also be a
    function of the operands' abstract values returning them, like a
    function opaque.  A layout written in the signature (HLO's
    minor-to-major order, ``f32[4,4]{0,1}``; with leading dims,
    ``f32[...b,m,n]{0,1}``, the leading ones majormost) is used where the
    call gives none, and must agree where it gives one.

    ``vmap_method`` is ffi_call's (``"sequential"``, ``"expand_dims"``,
    ``"broadcast_all"``, ...) or ccshim's ``"broadcast"``: one call on the
    whole batch, for kernels that take a batch.  The call for the batch is
    described, never guessed: the opaque, as a function of the operands, is
    recomputed for the batched shapes, and ``batch_operands(axis_size,
    operands, batched)`` (``batched``: which operands vmap batched) returns
    the batch's operands, e.g. every operand broadcast to the batch and a
    batch-size operand multiplied by ``axis_size``.  Without a function
    opaque, ``batch_operands`` is needed; without ``batch_operands`` every
    operand is broadcast.  Layouts given as lists are for one row: each
    batch dim is added majormost (jaxlib's batched layouts, and the rule of
    ffi_call's own batching) to the buffers whose rank the batch grew; an
    operand batch_operands left at its rank (a recomputed size, a rebuilt
    shape array) keeps its layout, () for a scalar; layouts given as a function are asked again
    for the batched shapes.  A signature must allow the batched ranks: one
    with leading dims (``f32[...b,m,n]``) serves the unbatched call and any
    batch with every check kept; a fixed signature is refused.

    ``ordered=True``: the kernel takes a token as its last operand and gives
    one as its last result, as mpi4jax's lowerings called theirs; JAX
    threads it through an ordered effect (the calls run in program order),
    and the call returns the array results only (a signature lists the
    tokens: ``(..., token[]) -> (..., token[])``).  ffi_call passes no
    token, so the call is built by ccshim (ccshim._ordered).
    """
    _args.text("name", name)
    adapter = registered(name, platform)
    attr = adapter.options["opaque_attr"] if adapter else "opaque"
    sig = adapter.signature if adapter else None
    if ordered:
        return _ordered_call(name, result_shape_dtypes, opaque, attr, 4, sig, dict(
            vmap_method=vmap_method, batch_operands=batch_operands,
            input_output_aliases=input_output_aliases, input_layouts=input_layouts,
            output_layouts=output_layouts))
    if vmap_method == "broadcast" and sig is not None and sig.is_static:
        raise ValueError(
            f"{name}: vmap_method='broadcast' gives the kernel batched shapes, "
            f"which its fixed signature {sig} would refuse; use 'sequential', "
            "or register it with a signature whose buffers take leading batch dims "
            "(f32[...b,m,n]) or none")

    def bind(operands, result_types, multiple, input_layouts, output_layouts):
        blob = _opaque_bytes(opaque, operands)
        flat = sig is not None and not sig.has_tuple_operand
        if flat:
            _check_signature(name, sig, operands, result_types, multiple)
        in_layouts = _layouts.for_call(name, "input", input_layouts,
                                       [np.shape(_aval(x)) for x in operands],
                                       sig.operands if flat else None)
        out_layouts = _layouts.for_call(name, "output", output_layouts,
                                        [t.shape for t in result_types],
                                        sig.results if flat else None)
        attrs = {attr: np.frombuffer(blob, np.uint8)} if blob else {}
        return jax.ffi.ffi_call(
            name, result_types if multiple else result_types[0],
            has_side_effect=has_side_effect,
            vmap_method=None if vmap_method == "broadcast" else vmap_method,
            input_layouts=in_layouts,
            output_layouts=out_layouts if multiple or out_layouts is None else out_layouts[0],
            input_output_aliases=input_output_aliases)(*operands, **attrs)

    return _call_site(name, result_shape_dtypes, vmap_method, (input_layouts, output_layouts),
                      opaque, batch_operands, bind)


def _ordered_call(name: str, result_shape_dtypes: Any, opaque: Any, attr: str,
                  api_version: int, sig: Signature | None, refused: dict) -> Callable[..., Any]:
    """A call site with ordered=True (legacy_call's, api_version 4, and
    xla_legacy_call's, 1-3): a token threaded through an ordered effect.
    The options in ``refused`` that ffi_call's path takes and this one does
    not are refused when given, not dropped."""
    given = [k for k, v in refused.items() if v is not None]
    if given:
        raise ValueError(f"{name}: ordered=True takes none of {', '.join(given)}: the call "
                         "is built by ccshim with row-major buffers and no batching rule")
    from . import _ordered
    multiple = isinstance(result_shape_dtypes, Sequence)
    results = list(result_shape_dtypes) if multiple else [result_shape_dtypes]

    def call(*operands):
        if sig is not None:
            _check_signature(name, sig, operands, results, multiple, token=True)
        blob = _opaque_bytes(opaque, operands)
        out = _ordered.call(name, operands, results, {attr: blob} if blob else {}, api_version)
        return out if multiple else out[0]
    return call


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
        _start_backend(canonical)
        jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(kernel),
                                    platform=xla_platform_name(canonical), api_version=0)
        _xla_legacy[key] = kernel
    return kernel


def xla_legacy_call(name: str, result_shape_dtypes: Any, *, api_version: int,
                    opaque: Any = b"", vmap_method: str | None = None,
                    has_side_effect: bool = False,
                    input_output_aliases: dict[int, int] | None = None,
                    input_layouts: Sequence[Any] | None = None,
                    output_layouts: Any = None,
                    batch_operands: Callable | None = None,
                    ordered: bool = False) -> Callable[..., Any]:
    """The same call site through XLA's legacy custom-call path
    (custom_call_api_version 1-3, the opaque as the legacy backend config,
    bytes kept intact): takes what legacy_call takes, with the same meaning,
    so that one call site can run both ways."""
    _args.text("name", name)
    api_version = _args.integer("api_version", api_version, 1, 3)
    if ordered:
        return _ordered_call(name, result_shape_dtypes, opaque, "opaque", api_version, None, dict(
            vmap_method=vmap_method, batch_operands=batch_operands,
            input_output_aliases=input_output_aliases, input_layouts=input_layouts,
            output_layouts=output_layouts))

    def bind(operands, result_types, multiple, input_layouts, output_layouts):
        blob = _opaque_bytes(opaque, operands)
        return jax.ffi.ffi_call(
            name, result_types if multiple else result_types[0],
            has_side_effect=has_side_effect,
            vmap_method=None if vmap_method == "broadcast" else vmap_method,
            input_layouts=input_layouts,
            output_layouts=output_layouts if multiple or output_layouts is None
            else output_layouts[0],
            input_output_aliases=input_output_aliases,
            custom_call_api_version=api_version,
            legacy_backend_config=blob if blob else None)(*operands)

    return _call_site(name, result_shape_dtypes, vmap_method, (input_layouts, output_layouts),
                      opaque, batch_operands, bind)
