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
