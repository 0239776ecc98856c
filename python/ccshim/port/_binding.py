"""How a handler's binding takes the call's buffers.

Where every lowering of a target passes the same number of operands and
results, written out (``operands=[a, b]``, ``result_types=[t, t]``), its
handler is bound as a hand port binds one: an ``Arg<AnyBuffer>`` per operand
and a ``Ret<AnyBuffer>`` per result, so that ffi.h checks the counts and the
handler makes its tables without a loop.  Anywhere else (a count known only
at run time, a lowering it cannot read, a translation rule) it takes
``RemainingArgs`` and ``RemainingRets``, which fit any count.

Past FIXED_MAX_BUFFERS buffers the fixed binding is not used: `ccshim bench`
measured it at 4 buffers cheaper than RemainingArgs in instructions and time,
and at 16 cheaper in instructions but up to a fifth slower in time (at 64,
four times slower), so the bound sits between the two (docs/port.md).
"""

from __future__ import annotations

import textwrap

FIXED_MAX_BUFFERS = 8

Counts = tuple[int, int]     # (operands, results)

# The key of `seen` that stands for any target: a module it cannot parse, or
# a custom call whose target it cannot read, may lower any of them.
ANY = ""


def fixed(seen: dict[str, set[Counts | None]]) -> dict[str, Counts]:
    """The targets whose lowerings all pass the same counts, written out, and
    no more than FIXED_MAX_BUFFERS buffers: those counts (none where a
    lowering may lower any target: ANY)."""
    if seen.get(ANY):
        return {}
    found = {}
    for target, counts in seen.items():
        if len(counts) != 1 or None in counts:
            continue
        (count,) = counts
        if sum(count) <= FIXED_MAX_BUFFERS:
            found[target] = count
    return found


def buffers(counts: Counts | None) -> list[str]:
    """The binding's calls that take the buffers, one per line after
    ``Ffi::Bind()``."""
    if counts is None:
        return [".RemainingArgs()", ".RemainingRets()"]
    args, rets = counts
    return [".Arg<xla::ffi::AnyBuffer>()"] * args + [".Ret<xla::ffi::AnyBuffer>()"] * rets


def said(counts: Counts | None) -> str:
    """What a handler's comment says of its counts ("" for run time's)."""
    if counts is None:
        return ""
    args, rets = counts
    return (f" ({args} operand{'s' if args != 1 else ''} and {rets} "
            f"result{'s' if rets != 1 else ''} at every call site)")


def comment(text: str) -> str:
    """text as // comment lines of at most 80 columns."""
    return "\n".join(textwrap.wrap(text, 77, initial_indent="// ",
                                   subsequent_indent="// ")) + "\n"
