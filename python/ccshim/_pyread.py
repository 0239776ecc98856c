"""The small readers of Python source that `ccshim port` (which edits a
project's Python) and `ccshim scan` (which reads it, python/ccshim/scan/)
share: both read it with libcst, so a name or a literal means the same to
both."""

from __future__ import annotations

import libcst as cst


def dotted(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a name or a chain of attributes; None for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def string(node: cst.BaseExpression | None) -> str | None:
    """A string literal's value (a bytes literal's as ASCII); None for
    anything else."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        if isinstance(value, bytes):     # a target name given as bytes
            try:
                return value.decode("ascii")
            except UnicodeDecodeError:
                return None
        return value if isinstance(value, str) else None
    return None


# A call's arguments -----------------------------------------------------------
# One rule for both: an argument is found by its keyword, else by its
# position among the positional arguments written before any *args. Past a
# *args its position is not known, and neither reader guesses it.

def arg_positional(call: cst.Call, index: int) -> cst.Arg | None:
    """The index-th positional argument; None when there is none, or when a
    *args before it hides where it is."""
    for a in call.args:
        if a.keyword is not None or a.star == "**":
            continue
        if a.star:
            return None
        if index == 0:
            return a
        index -= 1
    return None


def arg_keyword(call: cst.Call, name: str) -> cst.Arg | None:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name),
                None)


def arg(call: cst.Call, index: int, name: str) -> cst.Arg | None:
    """The argument given by keyword name, else the index-th positional one
    (none for a negative index)."""
    found = arg_keyword(call, name) if name else None
    if found is None and index >= 0:
        found = arg_positional(call, index)
    return found


def starred(call: cst.Call) -> bool:
    """Whether a *args or **kwargs passes the call arguments no reader can see."""
    return any(a.star for a in call.args)


# MLIR attributes written by hand ---------------------------------------------
# A stablehlo.CustomCallOp built by hand gives its attributes as MLIR builds
# them (`ir.StringAttr.get(name)`, `ir.IntegerAttr.get(i32, 2)`,
# `mlir.i32_attr(2)`) or as the Python values its builders take.

def _attr_call(node: cst.BaseExpression | None, *names: str) -> cst.Call | None:
    """node, where it calls a function whose dotted name ends in one of names."""
    if not isinstance(node, cst.Call):
        return None
    said = dotted(node.func) or ""
    return node if any(said == n or said.endswith("." + n) for n in names) else None


def attr_value(node: cst.BaseExpression) -> cst.BaseExpression:
    """The value a string attribute is made of: E for `X.StringAttr.get(E)`;
    node itself otherwise."""
    made = _attr_call(node, "StringAttr.get")
    return made.args[0].value if made is not None and len(made.args) == 1 else node


def version_literal(node: cst.BaseExpression | None) -> cst.Integer | None:
    """The integer literal an API version is written with: N itself,
    `X.IntegerAttr.get(TYPE, N)` or `X.i32_attr(N)`; None for anything else."""
    made = _attr_call(node, "IntegerAttr.get", "i32_attr")
    if made is not None and made.args:
        node = made.args[-1].value
    return node if isinstance(node, cst.Integer) else None
