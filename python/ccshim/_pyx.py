"""A Cython file read with Cython's own parser (Cython.Compiler), for
`ccshim port`'s port of its capsule exports (port/_cython) and for `ccshim
scan` (scan/_cython): what it exports, the cdef functions it defines and
those it declares from a header, the helpers that make capsules, and the
calls of the functions a reader asks for (registrations, custom calls).  The
parser gives each node's place; a kernel's parameters and a call's
arguments are taken as written there, since the port writes them back into
C declarations and edits the file at those places, keeping the rest of it
as it was.  Comments, strings and docstrings that look like code are not
read as code.
"""

from __future__ import annotations

import bisect
import contextlib
import io
import re
import tokenize
from dataclasses import dataclass, field


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
    returns_void: bool = False   # any cdef function returning void (inline, static...)


@dataclass
class Arg:
    """A call's argument: as written (comments dropped, each run of blanks
    one space), its string value where it is a literal, its node."""
    text: str
    literal: str | None
    node: object = field(repr=False)


@dataclass
class Call:
    """A call of one of the words a reader asked for: the word (the called
    name, or the attribute called: `xla_client.register_custom_call_target`),
    its line, its arguments, and the function around it (its name and
    parameters; None at module level)."""
    word: str
    line: int
    at: int                     # the called name, an offset in the text
    args: list[Arg]
    keywords: dict[str, Arg]
    within: str | None
    params: list[str]


@dataclass
class Helper:
    """A function whose body makes a capsule (`PyCapsule_New`): the mapping
    it puts the capsule in (`targets[fn_name] = PyCapsule_New(...)`), if
    any, and whether it calls a `register_...` function itself (early
    jaxlib's register_cpu_custom_call_target)."""
    name: str
    mapping: str | None
    registers: bool


@dataclass
class Declared:
    """A function a `cdef extern from "header"` block declares."""
    name: str
    header: str
    params: str


def _parse(name: str, text: str, level: str | None = None):
    try:
        from Cython.Compiler.TreeFragment import parse_from_strings
    except ImportError:
        raise Unreadable("no Cython here, whose parser reads .pyx files (pip install cython)")
    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            return parse_from_strings(name, text, level=level)
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
    """Every node under node, node first (_walk_within's, without the
    function each is in)."""
    return (n for n, _ in _walk_within(node))


def _walk_within(tree):
    """Every node, with the function (def or cdef) it is in (None at
    module level), parents first."""
    from Cython.Compiler import Nodes
    stack = [(tree, None)]
    while stack:
        node, within = stack.pop()
        yield node, within
        inner = node if isinstance(node, (Nodes.CFuncDefNode, Nodes.DefNode)) else within
        stack.extend((c, inner) for c in reversed(list(_children(node))))


def _start(node):
    """The node whose place is where an expression starts: its first in the
    text (a call's, an attribute's or a subscript's own place is its
    bracket or dot, inside it)."""
    first = node
    for inner, _ in _walk_within(node):
        if hasattr(inner, "pos") and inner.pos[1:] < first.pos[1:]:
            first = inner
    return first


def _called(call) -> str | None:
    """The name a call calls, or the attribute (`m.f(...)`: f)."""
    from Cython.Compiler import ExprNodes
    fn = call.function
    if isinstance(fn, ExprNodes.NameNode):
        return fn.name
    if isinstance(fn, ExprNodes.AttributeNode):
        return fn.attribute
    return None


def _function_of(node) -> str | None:
    from Cython.Compiler import Nodes
    if isinstance(node, Nodes.DefNode):
        return node.name
    if isinstance(node, Nodes.CFuncDefNode):
        return _function_name(node.declarator)
    return None


def _params_of(node) -> list[str]:
    """A function's parameter names (an untyped cdef parameter, which the
    parser takes for a type, by that name)."""
    from Cython.Compiler import Nodes
    declarator = _func_declarator(node.declarator) \
        if isinstance(node, Nodes.CFuncDefNode) else None
    if isinstance(node, Nodes.DefNode):
        args = node.args
    elif declarator is not None:
        args = declarator.args
    else:
        return []
    names = []
    for a in args:
        d = a.declarator
        while not isinstance(d, Nodes.CNameDeclaratorNode) and hasattr(d, "base"):
            d = d.base
        name = getattr(d, "name", "") or getattr(a.base_type, "name", None) or ""
        names.append(name)
    return names


def _helper(node) -> Helper | None:
    """A function that makes a capsule, as Helper; None for any other."""
    from Cython.Compiler import ExprNodes, Nodes
    name = _function_of(node)
    if name is None:
        return None
    capsule, mapping, registers = False, None, False
    for inner, _ in _walk_within(node.body):
        if isinstance(inner, (ExprNodes.SimpleCallNode, ExprNodes.GeneralCallNode)):
            word = _called(inner) or ""
            capsule |= word == "PyCapsule_New"
            registers |= word.startswith("register_")
        elif isinstance(inner, Nodes.SingleAssignmentNode) and \
                isinstance(inner.lhs, ExprNodes.IndexNode) and \
                isinstance(inner.lhs.base, ExprNodes.NameNode) and \
                isinstance(inner.rhs, ExprNodes.SimpleCallNode) and \
                _called(inner.rhs) == "PyCapsule_New":
            mapping = mapping or inner.lhs.base.name
    return Helper(name, mapping, registers) if capsule else None


def _func_declarator(declarator):
    """The CFuncDeclaratorNode a declarator is, under any pointers or
    references (a function returning one); None where it is none."""
    from Cython.Compiler import Nodes
    while isinstance(declarator, (Nodes.CPtrDeclaratorNode, Nodes.CReferenceDeclaratorNode)):
        declarator = declarator.base
    return declarator if isinstance(declarator, Nodes.CFuncDeclaratorNode) else None


def _function_name(declarator) -> str | None:
    """The name a (possibly pointer-returning) function declarator declares."""
    from Cython.Compiler import Nodes
    declarator = _func_declarator(declarator)
    if declarator is not None and isinstance(declarator.base, Nodes.CNameDeclaratorNode):
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
    """One Cython file (.pyx, .pxd, .pxi), parsed."""

    def __init__(self, name: str, text: str, pxd: bool = False):
        """pxd: a .pxd file (declarations), which Cython parses as such."""
        from Cython.Compiler import ExprNodes, Nodes
        self.text = text
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]
        tree = _parse(name, text, "module_pxd" if pxd else None)
        self.exports: list[Export] = []
        self.functions: dict[str, Function] = {}
        self.declared: dict[str, Declared] = {}
        self.helpers: dict[str, Helper] = {}
        self._calls: list = []      # (call node, the function it is in)
        for node, within in _walk_within(tree):
            if isinstance(node, (ExprNodes.SimpleCallNode, ExprNodes.GeneralCallNode)):
                if isinstance(node, ExprNodes.SimpleCallNode):
                    self._export(node)
                self._calls.append((node, within))
            if isinstance(node, (Nodes.CFuncDefNode, Nodes.DefNode)):
                helper = _helper(node)
                if helper is not None and helper.name not in self.helpers:
                    self.helpers[helper.name] = helper
            if isinstance(node, Nodes.CFuncDefNode):
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

    def calls_of(self, words) -> list[Call]:
        """The calls of the functions named in words (by the name called, or
        the attribute called), in the file's order."""
        found = [self._call(node, within) for node, within in self._calls
                 if _called(node) in words]
        return sorted(found, key=lambda c: c.at)

    def _call(self, call, within) -> Call:
        from Cython.Compiler import ExprNodes
        if isinstance(call, ExprNodes.SimpleCallNode):
            positional, keywords = call.args or [], []
        else:
            positional = call.positional_args.args \
                if isinstance(call.positional_args, ExprNodes.TupleNode) else []
            keywords = call.keyword_args.key_value_pairs \
                if isinstance(call.keyword_args, ExprNodes.DictNode) else []
        fn = call.function
        at = self._at(fn.pos)
        if isinstance(fn, ExprNodes.AttributeNode):      # (its place: the dot)
            dot = re.compile(r"\.\s*").match(self.text, at)
            at = dot.end() if dot else at
        return Call(_called(call), self._line(at), at, [self._arg(a) for a in positional],
                    {kv.key.value: self._arg(kv.value) for kv in keywords
                     if isinstance(kv.key, ExprNodes.IdentifierStringNode)},
                    _function_of(within), _params_of(within))

    def _arg(self, node) -> Arg:
        return Arg(self.expression(self._at(_start(node).pos)), _string(node), node)

    def expression(self, start: int) -> str:
        """The expression that starts at offset start, up to the comma or
        closing bracket that ends it, as written: comments dropped and each
        run of blanks one space (Python's tokenizer, which takes Cython's
        casts and pointers as operators)."""
        reader = io.StringIO(self.text[start:]).readline
        pieces: list[str] = []
        depth, last = 0, None
        try:
            for tok in tokenize.generate_tokens(reader):
                if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE,
                                tokenize.INDENT, tokenize.DEDENT):
                    continue
                if tok.type == tokenize.ENDMARKER:
                    break
                if tok.type == tokenize.OP and tok.string in ")]}" and depth == 0 or \
                        tok.type == tokenize.OP and tok.string == "," and depth == 0:
                    break
                if tok.type == tokenize.OP and tok.string in "([{":
                    depth += 1
                elif tok.type == tokenize.OP and tok.string in ")]}":
                    depth -= 1
                if last is not None and tok.start != last:
                    pieces.append(" ")
                pieces.append(tok.string)
                last = tok.end
        except (tokenize.TokenError, SyntaxError):
            pass        # (the file's end inside a bracket or a string: what came)
        return "".join(pieces)

    def _line(self, at: int) -> int:
        return bisect.bisect_right(self._starts, at)

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
        returns_void = isinstance(node.base_type, Nodes.CSimpleBaseTypeNode) and \
            node.base_type.name == "void" and isinstance(node.declarator,
                                                        Nodes.CFuncDeclaratorNode)
        return Function(name, node.pos[1], start, head.end() if head else start, params,
                        head is not None and returns_void, returns_void)

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
