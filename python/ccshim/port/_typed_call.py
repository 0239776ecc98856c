"""A ported call site whose layouts are not row-major, made typed in place.

`jax.ffi.ffi_lowering` cannot carry such a site's layouts: under
skip_ffi_layout_processing=True it drops them for XLA's row-major defaults,
and without it it zips them with the rule's avals, so a call with more
results than its rule returns loses layouts (veros 1.7.0's CUDA TDMA: two
results, the second a scratch row its rule drops, each laid out with its
last dimension major).  So the site keeps the `custom_call` it calls, where
that is JAX's own (`jax._src.interpreters.mlir.custom_call`, there in every
JAX the port supports, what ffi_lowering itself calls) and becomes typed as
ffi_lowering makes a call typed: `api_version=4` and its backend_config a
dictionary of attributes (on GPU the legacy opaque bytes as `opaque`, which
the ported handler binds; on CPU none).  Its operands, results, layouts and
everything else stay as written.  A site calling another custom_call
(jaxlib's hlo_helpers, `jax.interpreters.mlir`'s: gone from today's JAX) is
refused, with the reason.  Which sites are ported is _python.py's.
"""

from __future__ import annotations

import libcst as cst

from . import _gpu_lowering
from ._facts import _arg

# JAX's custom_call, which a typed call in place keeps.
KEPT = "jax._src.interpreters.mlir.custom_call"


def unshown(rows, call: cst.Call) -> list[str]:
    """The layout arguments of call that rows (_layouts.RowMajor) cannot
    show row-major (the original node: its scopes are known)."""
    return [a.keyword.value for a in call.args if a.keyword is not None and
            a.keyword.value in ("operand_layouts", "result_layouts") and
            not rows.many(a.value)]


def refusal(odd: list[str], full: str) -> str:
    """Why a site whose layouts are odd, calling full, stays legacy."""
    return (f"a custom call whose {' and '.join(odd)} it cannot show row-major, through "
            f"{full or 'a custom_call it cannot name'}, not JAX's own {KEPT}: "
            "jax.ffi.ffi_lowering would give XLA other layouts, and no typed custom call "
            "keeps them there: kept legacy, its targets held")


def _keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value, keyword=cst.Name(name),
                   equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))


def _set(call: cst.Call, arg: cst.Arg) -> cst.Call:
    """call with the keyword argument arg in place of its own of that name,
    or added last on a line of its own where each argument has one (the
    call's closing comma, or none, kept)."""
    name = arg.keyword.value
    args = list(call.args)
    at = next((i for i, a in enumerate(args) if a.keyword and a.keyword.value == name), None)
    if at is not None:
        args[at] = args[at].with_changes(value=arg.value)
        return call.with_changes(args=args)
    last = args[-1]
    between = args[-2].comma if len(args) > 1 else cst.Comma(
        whitespace_after=cst.SimpleWhitespace(" "))
    if isinstance(last.comma, cst.Comma):   # a closing comma: the new one is last
        args.append(arg.with_changes(comma=last.comma))
        args[-2] = last.with_changes(comma=between)
    else:
        args[-1] = last.with_changes(comma=between)
        args.append(arg)
    return call.with_changes(args=args)


def typed(call: cst.Call, gpu: bool, mlir: str, numpy: str) -> cst.Call:
    """call (a custom_call on ported targets) typed in place: its
    backend_config the dictionary of attributes its handler binds (GPU:
    {"opaque": the legacy opaque bytes}; CPU: {}), and api_version=4."""
    config = _arg(call, 99, "backend_config")
    attrs = cst.Dict([])
    if gpu:
        opaque = _gpu_lowering.opaque(config.value if config else None, numpy).value
        value = cst.Call(func=cst.parse_expression(f"{mlir}.ir_attribute"),
                         args=[cst.Arg(opaque)])
        attrs = cst.Dict([cst.DictElement(cst.SimpleString('"opaque"'), value)])
    call = _set(call, _keyword("backend_config", attrs))
    return _set(call, _keyword("api_version", cst.Integer("4")))


def in_place(new: cst.BaseExpression) -> bool:
    """Whether new, a ported site, is a call typed in place (its op kept,
    `.results` and all), not an ffi_lowering (whose results it is)."""
    return isinstance(new, cst.Call) and _arg(new, 99, "api_version") is not None
