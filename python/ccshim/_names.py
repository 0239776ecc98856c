"""Target names as `ccshim port` and `ccshim scan` follow them: a
registration's or a call site's name expression read as the strings it can
take.

A name is a *template*: a tuple of literal strings and symbolic parts.  A
literal is a literal; a symbolic part stands for a value the port cannot
know but can recognise again: a parameter it cannot follow further, or an
expression (``self._unique_name()``, ``str(self.basisClass.identifier)``)
keyed by its code and by the bindings of the names in it, so that the same
expression over the same variables is the same part.  That is the one
assumption: such an expression gives the same string each time it is
evaluated (PyBaMM's per-object suffix, tfc's identifier).  A registration's
name and a call site's name denote the same target when their templates
are equal once adjacent literals are joined.

Followed: literals (``str``, ``bytes``, implicit concatenation), ``+``,
f-strings without conversions or format specs, ``A if C else B`` (both),
``S.encode()`` in ASCII or UTF-8 (as S), locals (every assignment;
an ``if``/``else`` pair gives both; a local a function extends with ``+=``,
sphericart-jax's ``op_name``, statement by statement to the use, each branch
of an ``if``/``elif``/``else`` that does not raise a value), names of enclosing functions
(closures), a parameter through every call of its function in the module
(``partial(rule, NAME, ...)`` and direct calls) when those are all the
function's uses, and the key of a loop over ``M.registrations().items()``
(each key of that native module's dict).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import ParentNodeProvider, ScopeProvider

from ._pyread import dotted as _dotted, string as _string

_LIMIT = 64      # templates per expression, past which it gives up
_RAISED = object()  # what a branch that raises leaves a name (none of its values)
_DEPTH = 8       # parameters followed through calls, nested


@dataclass(frozen=True)
class Part:
    """A value the port cannot know, recognised by its key."""
    key: tuple


@dataclass(frozen=True)
class Keys:
    """Each key of a native module's registrations() dict."""
    module: str


Template = tuple  # of str | Part | Keys


def normal(parts) -> Template:
    """parts with adjacent literals joined and empty ones dropped."""
    out: list = []
    for p in parts:
        if isinstance(p, str):
            if not p:
                continue
            if out and isinstance(out[-1], str):
                out[-1] += p
                continue
        out.append(p)
    return tuple(out)


def literal(t: Template) -> str | None:
    """The string a template is, when it is only literals."""
    if all(isinstance(p, str) for p in t):
        return "".join(t)
    return None


def expand(t: Template, keys: dict[str, list[str]]) -> list[tuple[Template, str | None]]:
    """(template, key) for each key a Keys part of t stands for; (t, None)
    when t has none.  keys: a native module's dict keys."""
    spots = [p for p in t if isinstance(p, Keys)]
    if not spots:
        return [(t, None)]
    if len({s.module for s in spots}) != 1:
        return []
    return [(normal(k if isinstance(p, Keys) else p for p in t), k)
            for k in keys.get(spots[0].module, [])]


def _product(choices: list[list[Template]]) -> list[Template] | None:
    count = 1
    for c in choices:
        count *= len(c)
    if count > _LIMIT:
        return None
    return [normal(itertools.chain.from_iterable(combo)) for combo in itertools.product(*choices)]


class Names:
    """Follows name expressions in one module (a MetadataWrapper's)."""

    def __init__(self, wrapper, test=None):
        self.scopes = wrapper.resolve(ScopeProvider)
        self.parents = wrapper.resolve(ParentNodeProvider)
        self.module = wrapper.module
        # test(if_test, param, value): the value of an `if` test on a
        # parameter, for one value of it; None when it cannot tell
        self.test = test
        self._calls: dict[str, list[cst.Call]] | None = None
        self._uses: dict[str, int] | None = None
        self._fixed: dict[int, list[Template]] = {}   # a parameter's values, pinned
        self._augmented: dict[int, set[str]] = {}      # _extended's, by owner
        self._busy: set[int] = set()       # the assignments being followed (_bound)

    # What a name is bound to ------------------------------------------------
    def _assignments(self, node: cst.Name):
        scope = self.scopes.get(node)
        if scope is None:
            return None
        try:
            found = list(scope[node.value])
        except Exception:
            return None
        return found or None

    def values(self, node: cst.Name) -> list[cst.BaseExpression]:
        """The expressions a name is given by `=` in its scope (none for a
        parameter, a loop's variable, an import)."""
        found = [self.value_of(getattr(a, "node", None)) for a in self._assignments(node) or []]
        return [v for v in found if v is not None]

    def value(self, node: cst.Name) -> cst.BaseExpression | None:
        """The expression a name is assigned, where it is assigned once."""
        assignments = self._assignments(node)
        if not assignments or len(assignments) != 1:
            return None
        return self.value_of(getattr(assignments[0], "node", None))

    def value_of(self, target: cst.CSTNode | None) -> cst.BaseExpression | None:
        """The expression an assignment's target (a Name) is given by `=`."""
        parent = self.parents.get(target) if isinstance(target, cst.Name) else None
        assign = self.parents.get(parent) if isinstance(parent, cst.AssignTarget) else None
        return assign.value if isinstance(assign, cst.Assign) else None

    def _function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        while node is not None:
            node = self.parents.get(node)
            if isinstance(node, cst.FunctionDef):
                return node
        return None

    def _all_calls(self) -> dict[str, list[cst.Call]]:
        if self._calls is None:
            self._calls = {}
            for call in _walk(self.module, cst.Call):
                fn = call.func
                if _dotted(fn) in ("partial", "functools.partial") and call.args:
                    fn = call.args[0].value
                    args = call.args[1:]
                else:
                    args = call.args
                if isinstance(fn, cst.Name):
                    self._calls.setdefault(fn.value, []).append((call, args))
        return self._calls

    def _param(self, param: cst.Param, depth: int) -> list[Template]:
        """A parameter's templates: its arguments at every call of its
        function, where those calls are all of the function's uses; else the
        parameter itself, as a symbolic part."""
        if id(param) in self._fixed:
            return self._fixed[id(param)]
        opaque = [(Part(("param", id(param))),)]
        fn = self._function(param)
        if fn is None or depth >= _DEPTH or param.star:
            return opaque
        positional = [p.name.value for p in fn.params.params]
        name = param.name.value
        calls = self._all_calls().get(fn.name.value, [])
        if self._uses is None:
            self._uses = {}
            for n in _walk(self.module, cst.Name):
                self._uses[n.value] = self._uses.get(n.value, 0) + 1
        # every use is a call's function or partial's first argument (the def's
        # own name is one more)
        if not calls or self._uses.get(fn.name.value, 0) != len(calls) + 1:
            return opaque
        found: list[Template] = []
        for call, args in calls:
            arg = next((a for a in args if a.keyword and a.keyword.value == name), None)
            if arg is None and name in positional:
                plain = [a for a in args if a.keyword is None and not a.star]
                index = positional.index(name)
                if any(a.star for a in args[:index + 1]):
                    return opaque
                arg = plain[index] if index < len(plain) else None
            if arg is None:
                return opaque
            got = self.templates(arg.value, depth + 1)
            if got is None:
                return opaque
            found += got
        return found if len(found) <= _LIMIT else opaque

    def _bound(self, node: cst.Name, depth: int) -> list[Template] | None:
        assignments = self._assignments(node)
        if assignments is None:
            return None
        for owner in {id(o): o for o in (self._owner(getattr(a, "node", None))
                                          for a in assignments) if o is not None}.values():
            if node.value in self._extended(owner):
                # extended with +=: its value where node reads it, in owner only
                return self._flowed(node, owner, depth) \
                    if self._owner(node) is owner else None
        found: list[Template] = []
        for a in assignments:
            target = getattr(a, "node", None)     # none for a builtin
            if isinstance(target, cst.Param):
                found += self._param(target, depth)
                continue
            if not isinstance(target, cst.Name) or id(target) in self._busy:
                return None    # (a value made from itself: jax-chacha-prng's name = name.encode())
            self._busy.add(id(target))
            try:
                got = self._assigned(target, depth)
            finally:
                self._busy.discard(id(target))
            if got is None:
                return None
            found += got
        return found if len(found) <= _LIMIT else None

    def _extended(self, owner: cst.CSTNode) -> set[str]:
        """The names owner's own statements (not a nested function's)
        extend with an augmented assignment, read once per owner."""
        if id(owner) not in self._augmented:
            self._augmented[id(owner)] = {
                a.target.value for a in _walk(owner, cst.AugAssign)
                if isinstance(a.target, cst.Name) and self._owner(a) is owner}
        return self._augmented[id(owner)]

    def _owner(self, node: cst.CSTNode | None) -> cst.CSTNode | None:
        """The function whose body node is in, else the module."""
        if node is None:
            return None
        return self._function(node) or self.module

    def _flowed(self, node: cst.Name, owner: cst.CSTNode, depth: int) -> list[Template] | None:
        """The templates of a local that owner (a function or the module)
        extends with ``+=`` where node reads it: owner's statements run in
        order from its first to the one node is in (one of owner's own, not
        in a branch or a loop); None where the name is bound otherwise (a
        loop, a `with`, another operator) or may be unbound."""
        body = owner.body.body if isinstance(owner, cst.FunctionDef) else owner.body
        at = node
        while self.parents.get(at) is not None and not any(at is b for b in body):
            at = self.parents.get(at)
            if isinstance(at, cst.BaseSuite):
                return None         # read in a branch's or a loop's body
        state: list[Template] | None = []      # [] before its first assignment
        for stmt in body:
            if stmt is at:
                return state or None
            state = self._run(stmt, node.value, state, depth)
            if state is None or state is _RAISED:
                return None
        return None

    def _run(self, stmt: cst.CSTNode, name: str, state: list[Template], depth: int):
        """state (the templates name can hold) after stmt; _RAISED where it
        raises; None where it cannot follow it."""
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Raise):
                    return _RAISED
                if isinstance(small, cst.Assign) and any(
                        isinstance(t.target, cst.Name) and t.target.value == name
                        for t in small.targets):
                    if len(small.targets) != 1:
                        return None
                    state = self.templates(small.value, depth)
                elif isinstance(small, cst.AugAssign) and _extends(small, name):
                    if not isinstance(small.operator, cst.AddAssign) or not state:
                        return None
                    more = self.templates(small.value, depth)
                    state = None if more is None else _product([state, more])
                elif any(n.value == name for n in bound_names(small)):
                    return None
                if state is None:
                    return None
            return state
        if isinstance(stmt, cst.If):
            out: list[Template] = []
            branch: cst.CSTNode | None = stmt
            while isinstance(branch, cst.If):
                got = self._block(branch.body, name, state, depth)
                if got is None:
                    return None
                out += [] if got is _RAISED else got
                branch = branch.orelse
            got = self._block(branch.body, name, state, depth) if branch is not None else state
            if got is None:
                return None
            out += [] if got is _RAISED else got
            return out if len(out) <= _LIMIT else None
        if any(n.value == name for n in bound_names(stmt)):
            return None             # bound in a loop, a with, a try, a def
        return state

    def _block(self, block: cst.BaseSuite, name: str, state: list[Template], depth: int):
        for stmt in getattr(block, "body", ()):
            state = self._run(stmt, name, state, depth)
            if state is None or state is _RAISED:
                return state
        return state

    def _assigned(self, target: cst.Name, depth: int) -> list[Template] | None:
        parent = self.parents.get(target)
        if isinstance(parent, cst.AssignTarget):
            assign = self.parents.get(parent)
            if isinstance(assign, cst.Assign):
                return self.templates(assign.value, depth)
            return None
        # for KEY, VALUE in M.registrations().items() / for NAME in ("a", "b")
        loop = parent
        if isinstance(loop, cst.Element):
            loop = self.parents.get(self.parents.get(loop))
        if not isinstance(loop, cst.For):
            return None
        module = registrations_module(loop.iter)
        if module is not None and isinstance(loop.target, cst.Tuple) and \
                loop.target.elements[0].value is target:
            return [(Keys(module),)]
        values = loop_literals(loop) if loop.target is target else None
        return [(v,) for v in values] if values else None

    # Expressions ------------------------------------------------------------
    def reaching(self, node: cst.BaseExpression) -> list[Template] | None:
        """The templates of a call site's name that reach it: where the name
        reads one parameter of the enclosing function, only the values of it
        for which the `if` tests on it around the site let the site run."""
        fn = self._function(node)
        params = self._params_read(node, fn) if fn is not None and self.test is not None \
            else []
        if len({id(p) for _n, p in params}) != 1:
            return self.templates(node)
        name, param = params[0]
        kept = []
        for t in self._param(param, 0):
            value = literal(t)
            if value is None:
                return self.templates(node)
            reaches = self._reaches(node, fn, name, value)
            if reaches is None:
                return None
            if reaches:
                kept.append(t)
        self._fixed = {id(param): kept}
        try:
            return self.templates(node)
        finally:
            self._fixed = {}

    def _params_read(self, node: cst.BaseExpression, fn: cst.FunctionDef) -> list:
        """(name, Param) of fn's parameters that node reads: itself, or
        through fn's locals assigned from them (kepler_jax's `op_name =
        platform + "_kepler_f32"`)."""
        found, seen, todo = [], set(), list(_reads(node))
        while todo:
            name = todo.pop()
            for a in self._assignments(name) or []:
                target = getattr(a, "node", None)
                if id(target) in seen or self._function(target) is not fn:
                    continue
                seen.add(id(target))
                if isinstance(target, cst.Param):
                    found.append((name.value, target))
                    continue
                parent = self.parents.get(target) if isinstance(target, cst.Name) else None
                assign = self.parents.get(parent) if isinstance(parent, cst.AssignTarget) \
                    else None
                if isinstance(assign, cst.Assign):
                    todo += _reads(assign.value)
        return found

    def _reaches(self, node, fn, name: str, value: str) -> bool | None:
        """Whether the `if` tests between fn and node let node run when the
        parameter name is value; None when a test on it cannot be told."""
        child, parent = node, self.parents.get(node)
        while parent is not None and parent is not fn:
            if isinstance(parent, cst.If) and child is not parent.test:
                result = self.test(parent.test, name, value)
                if result is None:
                    if any(n.value == name for n in _reads(parent.test)):
                        return None
                elif result != (child is parent.body):
                    return False
            child, parent = parent, self.parents.get(parent)
        return True

    def templates(self, node: cst.BaseExpression, depth: int = 0) -> list[Template] | None:
        """Every template node can take; None when it cannot follow it."""
        lit = _string(node)
        if lit is not None:
            return [(lit,)]
        if isinstance(node, cst.ConcatenatedString):
            parts = [self.templates(node.left, depth), self.templates(node.right, depth)]
            return None if None in parts else _product(parts)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            parts = [self.templates(node.left, depth), self.templates(node.right, depth)]
            return None if None in parts else _product(parts)
        if isinstance(node, cst.FormattedString):
            parts = []
            for p in node.parts:
                if isinstance(p, cst.FormattedStringText):
                    parts.append([(p.value,)])
                elif p.conversion is None and p.format_spec is None:
                    parts.append(self.templates(p.expression, depth) or
                                 [(self._part(p.expression),)])
                else:
                    return None
            return _product(parts)
        if isinstance(node, cst.IfExp):
            parts = [self.templates(node.body, depth), self.templates(node.orelse, depth)]
            return None if None in parts or len(parts[0]) + len(parts[1]) > _LIMIT \
                else parts[0] + parts[1]
        if isinstance(node, cst.Name):
            return self._bound(node, depth)
        if _encoded(node):
            return self.templates(node.func.value, depth)
        if isinstance(node, (cst.Attribute, cst.Call, cst.Subscript)):
            return [(self._part(node),)]
        return None

    def _part(self, node: cst.BaseExpression) -> Part:
        """An expression the port cannot evaluate, keyed by its code and the
        bindings of the names it reads."""
        bindings = []
        for name in _reads(node):
            assignments = self._assignments(name) if name in self.scopes else None
            bindings.append((name.value, tuple(sorted(id(getattr(a, "node", None))
                                                      for a in assignments))
                             if assignments else None))
        return Part(("expr", cst.Module([]).code_for_node(node), tuple(bindings)))


def _encoded(node: cst.BaseExpression) -> bool:
    """Whether node is `S.encode()` in ASCII or UTF-8, whose bytes spell a
    target name as S does (jax-finufft's `f"nufft{ndim}d1{suffix}".encode("ascii")`)."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and
            node.func.attr.value == "encode") or len(node.args) > 1:
        return False
    if not node.args:
        return True
    a = node.args[0]
    return not a.star and (a.keyword is None or a.keyword.value == "encoding") and \
        (_string(a.value) or "").lower().replace("_", "-") in ("ascii", "utf-8", "utf8")


def registrations_module(node: cst.BaseExpression) -> str | None:
    """M for `M.registrations().items()` (also `M.registrations.items()`)."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and
            node.func.attr.value == "items"):
        return None
    inner = node.func.value
    if isinstance(inner, cst.Call):
        inner = inner.func
    dotted = _dotted(inner) or ""
    if not dotted.endswith(".registrations") and dotted != "registrations":
        return None
    parts = dotted.split(".")
    return parts[-2] if len(parts) > 1 else None


def loop_literals(loop: cst.For) -> list[str] | None:
    """The strings `for NAME in ("a", "b"):` binds NAME to, in order; None
    where the loop is over anything else."""
    if not (isinstance(loop.target, cst.Name) and isinstance(loop.iter, (cst.Tuple, cst.List))):
        return None
    values = [_string(e.value) for e in loop.iter.elements]
    return values if values and None not in values else None


def loop_module(node: cst.BaseExpression) -> str | None:
    """M for a loop over an extension's targets: registrations_module's
    forms, or `M.custom_call_targets.items()` (mpi4jax's dict)."""
    module = registrations_module(node)
    if module is None and isinstance(node, cst.Call) and \
            isinstance(node.func, cst.Attribute) and node.func.attr.value == "items":
        dotted = _dotted(node.func.value) or ""
        if dotted.endswith(".custom_call_targets"):
            module = dotted.split(".")[-2]
    return module


def _extends(node: cst.AugAssign, name: str) -> bool:
    return isinstance(node.target, cst.Name) and node.target.value == name


def bound_names(node: cst.CSTNode) -> list[cst.Name]:
    """The plain names a statement (or any statement in it) binds."""
    found = []
    for kind, attr in ((cst.AssignTarget, "target"), (cst.AugAssign, "target"),
                       (cst.AnnAssign, "target"), (cst.For, "target"),
                       (cst.AsName, "name"), (cst.NamedExpr, "target")):
        for n in _walk(node, kind):
            found += [t for t in _walk(getattr(n, attr), cst.Name)]
    return found


def _reads(node: cst.CSTNode) -> list[cst.Name]:
    """The names an expression reads (not attributes' or keywords' names)."""
    skip = {id(a.attr) for a in _walk(node, cst.Attribute)} | \
        {id(a.keyword) for a in _walk(node, cst.Arg) if a.keyword is not None}
    return [n for n in _walk(node, cst.Name) if id(n) not in skip]


def _walk(node: cst.CSTNode, kind):
    """Every node of a kind under node (node included), in source order."""
    found = []

    class Visit(cst.CSTVisitor):
        def on_visit(self, n):
            if isinstance(n, kind):
                found.append(n)
            return True

    node.visit(Visit())
    return found


def if_value(test: cst.BaseExpression, param: str, name: str) -> bool | None:
    """The value of an `if` test on a parameter (`param`) where it is
    `name`: `==`/`!=` a literal, `in`/`not in`, `.startswith(...)`, `not`;
    None when it cannot tell."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = if_value(test.expression, param, name)
        return None if inner is None else not inner
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        left, comp = test.left, test.comparisons[0]
        right = comp.comparator
        if isinstance(comp.operator, (cst.In, cst.NotIn)) and _dotted(right) == param:
            lit = _string(left)
            if lit is None:
                return None
            return (lit in name) == isinstance(comp.operator, cst.In)
        if isinstance(comp.operator, (cst.Equal, cst.NotEqual)):
            lit = _string(right) if _dotted(left) == param else (
                _string(left) if _dotted(right) == param else None)
            if lit is None:
                return None
            return (lit == name) == isinstance(comp.operator, cst.Equal)
    if (isinstance(test, cst.Call) and isinstance(test.func, cst.Attribute) and
            _dotted(test.func.value) == param and test.func.attr.value == "startswith" and
            len(test.args) == 1 and _string(test.args[0].value) is not None):
        return name.startswith(_string(test.args[0].value))
    return None
