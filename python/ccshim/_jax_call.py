"""ccshim.jax's call sites: legacy_call (ccshim's typed targets) and
xla_legacy_call (XLA's legacy path), one call site either way: operands and
results checked against the registered signature at trace time, the opaque
as bytes, layouts, batching and ordered calls."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable

import jax
import numpy as np
from jax import custom_batching

from . import _args, _layouts
from ._core import Signature
from ._jax_register import registered

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
    from ._core import dtype_name, dtype_number
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
    from ._core import numpy_dtype
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
