"""The layouts of a legacy call site, as jax.ffi.ffi_call takes them (per
buffer None for row-major, a Layout, or dimension numbers major-to-minor),
checked against a signature's (HLO's minor-to-major order) and extended
for a batch under vmap_method="broadcast"."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _args


def layout_order(what: str, layout: Any, rank: int) -> tuple[int, ...] | None:
    """A layout as jax.ffi.ffi_call takes it (None, a Layout, or dimension
    numbers major-to-minor) as HLO's minor-to-major order, or None."""
    if layout is None:
        return None
    if hasattr(layout, "major_to_minor"):
        if getattr(layout, "tiling", None):
            raise ValueError(f"{what}: tiled layouts are not supported: the FFI passes "
                             "untiled buffers")
        major_to_minor = tuple(layout.major_to_minor)
    else:
        try:
            major_to_minor = tuple(_args.integer(what, d, 0, 63) for d in layout)
        except TypeError:
            raise TypeError(f"{what} must be None, a Layout or a sequence of dimension "
                            f"numbers (major-to-minor), got {type(layout).__name__}") from None
    if sorted(major_to_minor) != list(range(rank)):
        raise ValueError(f"{what} is {major_to_minor}; expected an order of the {rank} "
                         f"dimension(s) 0..{rank - 1}, major-to-minor")
    return major_to_minor[::-1]


def hlo_layout(minor_to_major: Sequence[int]) -> str:
    return "{" + ",".join(map(str, minor_to_major)) + "}"


def for_call(name: str, side: str, given: Any, shapes: Sequence[Any],
                      leaves: Sequence[Any] | None) -> list | None:
    """The layouts to ask XLA for, major-to-minor as ffi_call takes them
    (None: row-major), after checking the call's against the signature's: a
    layout the signature writes is used where the call gives none; one the
    call gives must agree with the signature (no suffix there means
    row-major)."""
    if given is not None and (isinstance(given, (str, bytes)) or not isinstance(given, Sequence)):
        raise TypeError(f"{name}: {side}_layouts must be a sequence of layouts, one per "
                        f"{side}, got {type(given).__name__}")
    given = [None] * len(shapes) if given is None else list(given)
    if len(given) != len(shapes):
        raise ValueError(f"{name}: {len(given)} {side}_layouts for {len(shapes)} {side}(s)")
    out = []
    for i, (layout, shape) in enumerate(zip(given, shapes)):
        call = layout_order(f"{name}: {side}_layouts[{i}]", layout, len(shape))
        leaf = leaves[i] if leaves is not None else None
        if leaf is None or leaf.dtype == "token" or leaf.shape is None:
            out.append(None if call is None else call[::-1])
            continue
        want = leaf.layout_for(len(shape))
        if call is not None and call != want:
            said = (f"layout {hlo_layout(want)}" if leaf.layout is not None
                    else f"no layout, which means row-major {hlo_layout(want)}")
            raise ValueError(
                f"{name}: {side} {i}: the signature says {leaf} ({said}, minor-to-major as "
                f"HLO writes it); the call's {side}_layouts[{i}] is {call[::-1]} "
                f"(major-to-minor, JAX's order), which is {hlo_layout(call)}")
        out.append(want[::-1] if leaf.layout is not None or call is not None else None)
    return out if any(layout is not None for layout in out) else None


def for_batch(name: str, side: str, given: Any, shapes: Sequence[Any],
              grown: Sequence[int], avals: Sequence[Any], one: bool = False) -> list | None:
    """The call's {side}_layouts for these (possibly batched) shapes, a list
    of one per buffer or None.  A function is called with the operands'
    abstract values, as a function opaque is, so that it sees the batched
    shapes; a list written for one row is extended under
    vmap_method="broadcast" buffer by buffer: ``grown[i]`` is how many batch
    dims buffer i gained, each added majormost (the rule of
    jax.ffi.ffi_call's batching, and jaxlib's batched layouts).  A buffer
    the batch left at its rank (a size operand batch_operands recomputed, a
    shape array rebuilt) keeps its layout as written, () for a scalar.
    ``one``: the call has one result, whose layout is given alone, as
    ffi_call takes it."""
    if callable(given):
        given = given(*avals)
        grown = [0] * len(shapes)  # for these shapes already
    if given is not None and one:
        given = [given]
    if given is None:
        return None
    if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
        raise TypeError(f"{name}: {side}_layouts must be a sequence of layouts, one per "
                        f"{side}, or a function of the operands returning one; got "
                        f"{type(given).__name__}")
    given = list(given)
    if len(given) != len(shapes):
        raise ValueError(f"{name}: {len(given)} {side}_layouts for {len(shapes)} {side}(s)")
    if not any(grown):
        return given
    lifted = []
    for i, (layout, shape, depth) in enumerate(zip(given, shapes, grown)):
        if not depth:
            lifted.append(layout)
            continue
        row = layout_order(f"{name}: {side}_layouts[{i}] (for one row of the batch)", layout,
                            len(shape) - depth)
        lifted.append(None if row is None else
                      tuple(range(depth)) + tuple(d + depth for d in reversed(row)))
    return lifted
