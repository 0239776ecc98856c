"""A .pyx file read with Cython's own parser (Cython.Compiler), for the port
of its capsule exports (_cython): what it registers, the cdef functions it
defines and those it declares from a header.  The parser gives each node's
place; a kernel's parameters are taken as written there (the text between
its parentheses), since the port writes them back into C declarations and
edits the file at those places, keeping the rest of it as it was.  Comments,
strings and docstrings that look like code are not read as code.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass


# A kernel's head, from its `cdef` (not inline, extern or otherwise
# qualified) to its return type.
_HEAD = re.compile(r"cdef\s+(?:(?:public|api)\s+)?void\b")


class Unreadable(Exception):
    """The file is not Cython that Cython's parser takes, or no Cython is
    installed (its message says which)."""


@dataclass
class Export:
    """`helper("target", <void*>(kernel))`."""
    helper: str
    target: str
    kernel: str
    line: int
    kernel_at: int      # the kernel's name, an offset in the text


@dataclass
class Function:
    """`cdef [public|api] void name(params)` (start: the `cdef`; head: just
    past its `void`; params: as written, less comments), or any cdef
    function for its place (void: whether it is of that form)."""
    name: str
    line: int
    start: int
    head: int
    params: str
    void: bool


@dataclass
class Declared:
    """A function a `cdef extern from "header"` block declares."""
    name: str
    header: str
    params: str


def _parse(name: str, text: str):
    try:
        from Cython.Compiler.TreeFragment import parse_from_strings
    except ImportError:
        raise Unreadable("no Cython here, whose parser reads .pyx files (pip install cython)")
    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            return parse_from_strings(name, text)
    except Exception as e:      # Cython's CompileError and what its parser raises
        raise Unreadable(f"Cython's parser does not take it ({type(e).__name__}: "
                         f"{str(e).strip().splitlines()[-1] if str(e).strip() else ''})")


def _children(node):
    for attr in getattr(node, "child_attrs", ()):
        child = getattr(node, attr, None)
        for c in child if isinstance(child, list) else [child]:
            if hasattr(c, "child_attrs"):
                yield c


def _walk(node):
    yield node
    for c in _children(node):
        yield from _walk(c)


def _function_name(declarator) -> str | None:
    """The name a (possibly pointer-returning) function declarator declares."""
    from Cython.Compiler import Nodes
    while isinstance(declarator, (Nodes.CPtrDeclaratorNode, Nodes.CReferenceDeclaratorNode)):
        declarator = declarator.base
    if isinstance(declarator, Nodes.CFuncDeclaratorNode) and \
            isinstance(declarator.base, Nodes.CNameDeclaratorNode):
        return declarator.base.name
    return None


def _string(node) -> str | None:
    from Cython.Compiler import ExprNodes
    kinds = tuple(getattr(ExprNodes, k) for k in ("UnicodeNode", "StringNode", "BytesNode")
                  if hasattr(ExprNodes, k))      # (StringNode: before Cython 3.1)
    if isinstance(node, kinds):
        value = node.value
        return value.decode() if isinstance(value, bytes) else str(value)
    return None


class Pyx:
    """One .pyx file, parsed."""

    def __init__(self, name: str, text: str):
        from Cython.Compiler import ExprNodes, Nodes
        self.text = text
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]
        tree = _parse(name, text)
        self.exports: list[Export] = []
        self.functions: dict[str, Function] = {}
        self.declared: dict[str, Declared] = {}
        for node in _walk(tree):
            if isinstance(node, ExprNodes.SimpleCallNode):
                self._export(node)
            elif isinstance(node, Nodes.CFuncDefNode):
                name_ = _function_name(node.declarator)
                if name_ is not None and name_ not in self.functions:
                    self.functions[name_] = self._function(node, name_)
            elif isinstance(node, Nodes.CDefExternNode) and node.include_file:
                for decl in _walk(node.body):
                    if isinstance(decl, Nodes.CVarDefNode):
                        for d in decl.declarators:
                            fn = _function_name(d)
                            if fn is not None and fn not in self.declared:
                                params = self._params(self._at(decl.pos), fn)
                                self.declared[fn] = Declared(fn, node.include_file, params)
        self.exports.sort(key=lambda e: e.kernel_at)

    def _at(self, pos) -> int:
        """The offset of a parser position (its line from 1, its column)."""
        return self._starts[pos[1] - 1] + pos[2]

    def _params(self, at: int, name: str) -> str:
        """The text between the parentheses of name (first written at or
        after at), less comments."""
        m = re.compile(r"\b" + re.escape(name) + r"\s*\(").search(self.text, at)
        if m is None:
            raise Unreadable(f"{name}'s parameters are not where Cython's parser placed it")
        depth, i = 1, m.end()
        while depth and i < len(self.text):
            depth += {"(": 1, ")": -1}.get(self.text[i], 0)
            i += 1
        # (a comment among them is Cython's, not C's)
        return re.sub(r"#[^\n]*", "", self.text[m.end():i - 1])

    def _function(self, node, name: str) -> Function:
        from Cython.Compiler import Nodes
        start = self._at(node.pos)
        params = self._params(start, name)
        head = _HEAD.match(self.text, start)
        void = head is not None and isinstance(node.base_type, Nodes.CSimpleBaseTypeNode) and \
            node.base_type.name == "void" and isinstance(node.declarator,
                                                         Nodes.CFuncDeclaratorNode)
        return Function(name, node.pos[1], start, head.end() if head else start, params, void)

    def _export(self, call) -> None:
        from Cython.Compiler import ExprNodes, Nodes
        args = call.args or []
        if not (isinstance(call.function, ExprNodes.NameNode) and len(args) == 2):
            return
        target, cast = _string(args[0]), args[1]
        if target is None or not (
                isinstance(cast, ExprNodes.TypecastNode) and
                isinstance(cast.base_type, Nodes.CSimpleBaseTypeNode) and
                cast.base_type.name == "void" and
                isinstance(cast.declarator, Nodes.CPtrDeclaratorNode) and
                isinstance(cast.declarator.base, Nodes.CNameDeclaratorNode) and
                isinstance(cast.operand, ExprNodes.NameNode)):
            return
        self.exports.append(Export(call.function.name, target, cast.operand.name,
                                   call.function.pos[1], self._at(cast.operand.pos)))
