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
from collections.abc import Sequence
from typing import Any, Callable

import jax
import numpy as np
from jax import custom_batching

from . import (Adapter, Signature, _args, check_wrap_args, parse_platform, resolve_kernel,
               wrap)

__all__ = ["register_legacy", "legacy_call", "registered", "register_xla_legacy",
           "xla_legacy_call"]

# Platform names as jax.ffi.register_ffi_target spells them ("cpu" -> Host).
_JAX_PLATFORM = {"host": "cpu", "cuda": "CUDA", "rocm": "ROCM"}

_lock = threading.Lock()
# (name, canonical platform) -> Adapter.  Never emptied: XLA has no
# unregister, so a registered handler must outlive every call.
_registered: dict[tuple[str, str], Adapter] = {}
# Adapters whose registration XLA refused: XLA already asked them its
# metadata query, so they are kept too.
_refused: list[Adapter] = []


def _start_backend(platform: str) -> None:
    """JAX queues registrations until the platform's backend exists; starting
    it first makes XLA's checks (the metadata handshake, duplicate names)
    happen now, at registration, where errors belong."""
    try:
        jax.devices(_JAX_PLATFORM[platform].lower())
    except RuntimeError:
        pass  # no such backend in this process: JAX queues the registration


def register_legacy(name: str, fn: Any, *, platform: str = "cpu", api_version: int,
                    signature: str | None = None, opaque_attr: str = "opaque",
                    tuple_operands: str = "flat", traits: int = 0,
                    ffi_version: tuple[int, int] = (0, 1)) -> Adapter:
    """Wraps a legacy kernel and registers it with JAX as a typed-FFI target.

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
    _args.text("name", name)
    options = check_wrap_args(api_version, platform, signature, opaque_attr,
                              tuple_operands, traits, ffi_version)
    canonical, _ = parse_platform(platform)
    kernel = resolve_kernel(fn, canonical)
    key = (name, canonical)
    with _lock:
        existing = _registered.get(key)
        if existing is not None:
            same_sig = (existing.signature.text if existing.signature else None) == (
                Signature(signature).text if signature is not None else None)
            if (existing.kernel == kernel and existing.api_version == api_version
                    and existing.options == options and same_sig):
                return existing
            raise ValueError(
                f"{name!r} is already registered for {canonical} with a different "
                "kernel, form, signature or options; XLA cannot replace a "
                "registered handler, so choose another name")
        adapter = wrap(kernel, api_version=api_version, platform=canonical,
                       signature=signature, **options)
        _start_backend(canonical)
        try:
            jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(adapter.handler),
                                        platform=_JAX_PLATFORM[canonical],
                                        api_version=1)
        except Exception:
            _refused.append(adapter)
            raise
        _registered[key] = adapter
        return adapter


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


def _check_signature(name: str, sig: Signature, operands, results, multiple) -> None:
    if sig.has_tuple_operand:
        return  # JAX passes no tuple operands; the adapter checks the leaves
    if len(operands) != len(sig.operands):
        raise ValueError(
            f"{name}: the signature {sig} takes {len(sig.operands)} operand(s), "
            f"the call passes {len(operands)}")
    from . import numpy_dtype
    for i, (x, want) in enumerate(zip(operands, sig.operands)):
        aval = _aval(x)
        if want.dtype == "token":
            continue
        if tuple(aval.shape) != want.shape or np.dtype(aval.dtype) != numpy_dtype(want.dtype):
            raise ValueError(f"{name}: operand {i}: the signature {sig} expects "
                             f"{want}, got {_describe(aval.shape, aval.dtype)}")
    if multiple != sig.tuple_result:
        raise ValueError(
            f"{name}: the signature's result is {'' if sig.tuple_result else 'not '}"
            "a tuple, so pass result_shape_dtypes as "
            f"{'a sequence' if sig.tuple_result else 'one ShapeDtypeStruct'}")
    if len(results) != len(sig.results):
        raise ValueError(f"{name}: the signature {sig} has {len(sig.results)} "
                         f"result(s), the call asks for {len(results)}")
    for i, (r, want) in enumerate(zip(results, sig.results)):
        if want.dtype == "token":
            continue
        if tuple(r.shape) != want.shape or np.dtype(r.dtype) != numpy_dtype(want.dtype):
            raise ValueError(f"{name}: result {i}: the signature {sig} expects "
                             f"{want}, got {_describe(r.shape, r.dtype)}")


def legacy_call(name: str, result_shape_dtypes: Any, *, opaque: Any = b"",
                vmap_method: str | None = None, has_side_effect: bool = False,
                input_output_aliases: dict[int, int] | None = None,
                platform: str | None = None) -> Callable[..., Any]:
    """A legacy call site, made typed: returns a callable of the operands.

    ``opaque`` is the old backend config: bytes (NULs welcome), str, a
    uint8 array, or a function of the operands' abstract values returning
    bytes (evaluated at trace time, and again for the batched shapes under
    ``vmap_method="broadcast"``).  It is passed as the adapter's opaque
    attribute, a uint8 array.  ``vmap_method`` is ``jax.ffi.ffi_call``'s
    (``"sequential"``, ``"expand_dims"``, ``"broadcast_all"``, ...) or
    ccshim's ``"broadcast"``: one call on the whole batch, every operand
    broadcast to it, the opaque recomputed for the batched shapes.
    """
    _args.text("name", name)
    adapter = registered(name, platform)
    attr = adapter.options["opaque_attr"] if adapter else "opaque"
    sig = adapter.signature if adapter else None
    multiple = isinstance(result_shape_dtypes, Sequence)
    results = list(result_shape_dtypes) if multiple else [result_shape_dtypes]
    if vmap_method == "broadcast" and sig is not None:
        raise ValueError(
            f"{name}: vmap_method='broadcast' gives the kernel batched shapes, "
            f"which its fixed signature {sig} would refuse; use 'sequential', "
            "or register it without a signature")

    def bind(operands, result_types):
        blob = _opaque_bytes(opaque, operands)
        if sig is not None:
            _check_signature(name, sig, operands, result_types, multiple)
        attrs = {attr: np.frombuffer(blob, np.uint8)} if blob else {}
        shapes = result_types if multiple else result_types[0]
        return jax.ffi.ffi_call(
            name, shapes, has_side_effect=has_side_effect,
            vmap_method=None if vmap_method == "broadcast" else vmap_method,
            input_output_aliases=input_output_aliases)(*operands, **attrs)

    if vmap_method != "broadcast":
        return lambda *operands: bind(operands, results)

    def batched_types(types, size):
        return [jax.ShapeDtypeStruct((size, *t.shape), t.dtype) for t in types]

    def make(types):
        @custom_batching.custom_vmap
        def call(*operands):
            return bind(operands, types)

        @call.def_vmap
        def rule(axis_size, in_batched, *operands):
            full = [x if b else jax.numpy.broadcast_to(x, (axis_size, *np.shape(x)))
                    for x, b in zip(operands, in_batched)]
            out = make(batched_types(types, axis_size))(*full)
            return out, ([True] * len(types) if multiple else True)

        return call

    return make(results)


# --- XLA's own legacy path, for side-by-side conformance ------------------------


def register_xla_legacy(name: str, fn: Any, *, platform: str = "cpu") -> int:
    """Registers a kernel with XLA's legacy registry (api_version=0), the path
    JAX has deprecated; for comparing it with ccshim while XLA still runs it."""
    canonical, _ = parse_platform(platform)
    kernel = resolve_kernel(fn, canonical)
    _start_backend(canonical)
    jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(kernel),
                                platform=_JAX_PLATFORM[canonical], api_version=0)
    return kernel


def xla_legacy_call(name: str, result_shape_dtypes: Any, *, api_version: int,
                    opaque: bytes | str = b"") -> Callable[..., Any]:
    """A call through XLA's legacy custom-call path (custom_call_api_version
    1-3, the opaque as the legacy backend config, bytes kept intact)."""
    if isinstance(opaque, str):
        opaque = opaque.encode()
    return jax.ffi.ffi_call(name, result_shape_dtypes,
                            custom_call_api_version=api_version,
                            legacy_backend_config=opaque if opaque else None)
