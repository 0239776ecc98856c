"""What `ccshim scan` says of a Python expression: its text on one line,
the function it names, the API version it gives, the shape of a name
built at run time.  Each reads the libcst node, not its characters."""

from __future__ import annotations

import re

import libcst as cst

from .._pyread import string, version_literal

_MODULE = cst.Module(body=[])
# Identifiers that are casts or capsule makers, passed over on the way to
# the function an expression names (tools/scan/source.c's list for C).
_PEEL = frozenset({"reinterpret_cast", "static_cast", "PyCapsule_New", "EncapsulateFunction",
                   "encapsulate_function", "void", "const", "char", "ctypes", "cast",
                   "c_void_p", "nullptr", "NULL"})
_VERSION_WORDS = (("STATUS_RETURNING_UNIFIED", 3), ("STATUS_RETURNING", 2),
                  ("API_VERSION_ORIGINAL", 1), ("TYPED_FFI", 4), ("API_VERSION_UNSPECIFIED", 0))


class _Uncomment(cst.CSTTransformer):
    def leave_EmptyLine(self, original, updated):
        return cst.RemoveFromParent() if updated.comment is not None else updated

    def leave_TrailingWhitespace(self, original, updated):
        return updated.with_changes(comment=None)


def text(node: cst.CSTNode) -> str:
    """The expression as written, comments dropped and each run of blanks
    one space (a call over several lines on one)."""
    code = _MODULE.code_for_node(node.visit(_Uncomment()))
    return re.sub(r"\s+", " ", code).strip()


def literal(node: cst.BaseExpression | None) -> str | None:
    """A string literal's value (bytes as ASCII, `"name".encode()` too, and
    literals written side by side); None for anything else."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
            node.func.attr.value == "encode":
        node = node.func.value
    if isinstance(node, cst.ConcatenatedString):
        left, right = literal(node.left), literal(node.right)
        return None if left is None or right is None else left + right
    return string(node)


def version(node: cst.BaseExpression) -> int:
    """The API version an expression names: an integer, XLA's enum names,
    the integer of ir.IntegerAttr.get(type, N) or mlir.i32_attr(N)
    (_pyread.version_literal); -1 when computed."""
    said = text(node)
    for word, number in _VERSION_WORDS:
        if word in said:
            return number
    written = version_literal(node)
    if written is not None:
        value = int(written.value, 0)
        return value if 0 <= value <= 9 else -1
    return -1


def _names(node: cst.CSTNode, after: str):
    """Each identifier of an expression in source order, with what follows
    it: "." (an object), "(args)" or "()" (a call), or "" (anything else)."""
    if isinstance(node, cst.Name):
        yield node.value, after
    elif isinstance(node, cst.Attribute):
        yield from _names(node.value, ".")
        yield node.attr.value, after
    elif isinstance(node, cst.Call):
        yield from _names(node.func, "(args)" if node.args else "()")
        for arg in node.args:
            if arg.keyword is not None:
                yield arg.keyword.value, ""
            yield from _names(arg.value, "")
    elif not isinstance(node, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
        for child in node.children:
            yield from _names(child, "")


def function(node: cst.BaseExpression) -> str:
    """The function an expression names: the first identifier that is not a
    cast or capsule maker, an object, or a call with arguments (a call
    without them names the maker: `ext.add_v2()` gives add_v2;
    `PyCapsule_New(f, name)` gives f); "" when none."""
    for name, after in _names(node, ""):
        if name not in _PEEL and after not in (".", "(args)"):
            return name
    return ""


def _calls_id(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "id":
        return True
    return any(_calls_id(c) for c in node.children)


def _mark(node: cst.CSTNode) -> str:
    return "<id>" if _calls_id(node) else "<...>"


def _pieces(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of a chain of +."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return _pieces(node.left) + _pieces(node.right)
    return [node]


def _shape(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.FormattedString):
        return "".join(p.value if isinstance(p, cst.FormattedStringText) else _mark(p.expression)
                       for p in node.parts)
    if isinstance(node, cst.ConcatenatedString):
        return _shape(node.left) + _shape(node.right)
    said = literal(node)
    return said if said is not None else _mark(node)


def _has_string(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString))


def name_shapes(node: cst.BaseExpression) -> tuple[str, str]:
    """A name computed at run time: (pattern, "") when it calls id() (a
    target per object, "instance_filter_<id>"), ("", shape) when it is
    built from strings and values ("BasisFunc<...>"), ("", "") otherwise."""
    pieces = _pieces(node)
    built = any(_has_string(p) for p in pieces) and (
        len(pieces) > 1 or any(isinstance(p, cst.FormattedString) and
                               any(isinstance(x, cst.FormattedStringExpression) for x in p.parts)
                               for p in pieces))
    if _calls_id(node):
        return "".join(_shape(p) for p in pieces), ""
    if built:
        return "", "".join(_shape(p) for p in pieces)
    return "", ""


def getattr_module(node: cst.CSTNode) -> str:
    """The module of the first `getattr(module, ...)` in an expression, or ""."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and \
            node.func.value == "getattr" and node.args and isinstance(node.args[0].value,
                                                                      cst.Name):
        return node.args[0].value.value
    for child in node.children:
        found = getattr_module(child)
        if found:
            return found
    return ""
