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


def impl(kind: str, counts: Counts | None) -> str:
    """The header's handler template for a kernel of kind ("Cpu",
    "CpuStatus", "Gpu", "GpuStatus") bound for those counts."""
    return kind + ("FixedHandler" if counts else "Handler")


def handler(kind: str, counts: Counts | None, kernel: str) -> str:
    """The handler XLA_FFI_DEFINE_HANDLER is given for a kernel: the
    adapter's instance, in parentheses where the kernel's template
    arguments have a comma (sphericart-jax's cpu_sph<Harmonics, float>),
    which the preprocessor would take for one between the macro's
    arguments."""
    text = f"xla_legacy_call::{impl(kind, counts)}<{kernel}>"
    return f"({text})" if "," in kernel else text


def bind(counts: Counts | None, indent: str, ctx: str = "", attr: str = "",
         one_line: bool = False) -> str:
    """``xla::ffi::Ffi::Bind()`` and its calls: ctx's, those that take the
    buffers, attr's; each on a line of its own under indent, or all on one
    line (one_line)."""
    if counts is None:
        buffers = [".RemainingArgs()", ".RemainingRets()"]
    else:
        args, rets = counts
        buffers = [".Arg<xla::ffi::AnyBuffer>()"] * args + [".Ret<xla::ffi::AnyBuffer>()"] * rets
    calls = [c for c in (ctx, *buffers, attr) if c]
    joint = "" if one_line else f"\n{indent}    "
    return "xla::ffi::Ffi::Bind()" + "".join(joint + c for c in calls)


def said(counts: Counts) -> str:
    """What a handler's comment says of its fixed counts."""
    args, rets = counts
    return (f"{args} operand{'s' if args != 1 else ''} and {rets} "
            f"result{'s' if rets != 1 else ''} at every call site")


def comment(text: str) -> str:
    """text as // comment lines of at most 80 columns."""
    return "\n".join(textwrap.wrap(text, 77, initial_indent="// ",
                                   subsequent_indent="// ")) + "\n"
