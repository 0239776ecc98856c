"""Whether a legacy call site's layouts are row-major, read from its code.

`jax.ffi.ffi_lowering(..., skip_ffi_layout_processing=True)` passes no
layouts to XLA (JAX 0.10.2 to 0.12.0.1 drop operand_layouts and
result_layouts under it), and XLA then gives a custom call's operands and
results its default, row-major layouts.  So a call site is ported that way
only where its layouts are row-major too: absent, or written in one of the
forms that make the descending dimension order, which is what every
census project writes:

    ()  []                                   a scalar's
    range(len(s) - 1, -1, -1), tuple(...) / list(...) of it
    [L, ...], (L, ...), [L] * n, A + B, *A   of row-major ones
    [range(...) for shape in shapes]          a comprehension of one
    layouts[i]                                an element of such a list
    a local or a module function whose value or return is one of these
    a list made empty and grown by append(L) / extend(list of L)
    a lambda bound to a local, whose body is one of these
    a function another module of the tree defines (mpi4jax's
    get_default_layouts in mpi4jax/_src/utils.py), read there

A function is read for the string arguments of the call (or the defaults):
what sits under an `if` that those make false is not read (mpi4jax's
order="f" lambda, for order="c").
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

_DESCENDING = m.Call(func=m.Name("range"), args=[
    m.Arg(value=m.BinaryOperation(operator=m.Subtract(), right=m.Integer("1"))),
    m.Arg(value=m.UnaryOperation(operator=m.Minus(), expression=m.Integer("1"))),
    m.Arg(value=m.UnaryOperation(operator=m.Minus(), expression=m.Integer("1")))])


class RowMajor:
    """Reads layout expressions in one module.  imported(name): for a name
    the module imports from another module of the tree, that module's
    RowMajor and its functions of that name; None otherwise."""

    def __init__(self, module: cst.Module, names, imported=None):
        self.names = names
        self.imported = imported
        self.functions: dict[str, list[cst.FunctionDef]] = {}
        for f in m.findall(module, m.FunctionDef()):
            self.functions.setdefault(f.name.value, []).append(f)
        self.bound: dict[str, str] = {}     # the parameters of the call being read

    def one(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """node is one operand's row-major layout."""
        if depth > 6:
            return False
        if isinstance(node, (cst.Tuple, cst.List)):
            # (), [0], (1, 0): a literal descending order down to 0
            values = [e.value.value if isinstance(e.value, cst.Integer) else None
                      for e in node.elements]
            return None not in values and [int(v) for v in values] == \
                list(range(len(values) - 1, -1, -1))
        if m.matches(node, _DESCENDING):
            return True
        if m.matches(node, m.Call(func=m.Name("tuple") | m.Name("list"), args=[m.Arg()])):
            return self.one(node.args[0].value, depth + 1)
        if self._returns(node, depth, self.one):
            return True
        if isinstance(node, cst.Subscript) and self.many(node.value, depth + 1):
            return True     # an element of a list of row-major ones
        return self._named(node, depth, self.one)

    def many(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """node is a list of row-major layouts."""
        if depth > 6:
            return False
        if isinstance(node, (cst.Tuple, cst.List)):
            return all(self.many(e.value, depth + 1) if isinstance(e, cst.StarredElement)
                       else self.one(e.value, depth + 1) for e in node.elements)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            return self.many(node.left, depth + 1) and self.many(node.right, depth + 1)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
            return any(isinstance(side, (cst.List, cst.Tuple)) and self.many(side, depth + 1)
                       for side in (node.left, node.right))
        if isinstance(node, (cst.ListComp, cst.GeneratorExp)):
            return self.one(node.elt, depth + 1)
        if self._returns(node, depth, self.many):
            return True
        return self._named(node, depth, self.many)

    def _returns(self, node, depth: int, read) -> bool:
        """node calls a function (of the module, or imported from another of
        the tree; every one of that name) whose every return is what read
        accepts, or a lambda bound to a local whose body is."""
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name)):
            return False
        lambdas = self._lambdas(node.func)
        if lambdas:
            return all(read(lam.body, depth + 1) for lam in lambdas)
        owner, functions = self, self.functions.get(node.func.value, [])
        if not functions and self.imported is not None:
            owner, functions = self.imported(node.func.value) or (self, [])
        # read in the function's own module (its names are that module's)
        return bool(functions) and all(
            owner._read_returns(f, node, depth, getattr(owner, read.__name__))
            for f in functions)

    def _read_returns(self, f: cst.FunctionDef, call: cst.Call, depth: int, read) -> bool:
        """Every return of f that the call's string arguments let run is
        what read accepts."""
        saved, self.bound = self.bound, _string_args(f, call)
        try:
            returns = [r for r in m.findall(f, m.Return()) if self._runs(r)]
            return bool(returns) and all(r.value is not None and read(r.value, depth + 1)
                                         for r in returns)
        finally:
            self.bound = saved

    def _runs(self, node: cst.CSTNode) -> bool:
        """Whether node can run for the parameters bound (an `if` on one of
        them that they make false says it cannot)."""
        fn = self.names._function(node)
        return fn is None or all(self.names._reaches(node, fn, name, value) is not False
                                 for name, value in self.bound.items())

    def _lambdas(self, name: cst.Name) -> list[cst.Lambda] | None:
        """The lambdas a local is bound to, where every binding that can run
        is one."""
        values = self._values(name)
        if not values or not all(isinstance(v, cst.Lambda) for v in values):
            return None
        return values

    def _values(self, node: cst.Name) -> list | None:
        """The values a name is assigned where the assignment can run (an
        `x += v` gives v); None where it is bound otherwise."""
        values = []
        for a in self.names._assignments(node) or []:
            target = getattr(a, "node", None)
            parent = self.names.parents.get(target) if isinstance(target, cst.Name) else None
            if target is not None and not self._runs(target):
                continue
            if isinstance(parent, cst.AugAssign) and isinstance(parent.operator, cst.AddAssign):
                values.append(parent.value)
                continue
            statement = self.names.parents.get(parent) if isinstance(parent, cst.AssignTarget) \
                else None
            if not isinstance(statement, cst.Assign):
                return None
            values.append(statement.value)
        return values

    def _grown(self, node: cst.Name) -> list[tuple[str, cst.BaseExpression]] | None:
        """How a list bound to node is changed in place where it is read:
        ("one", L) for append(L), ("many", Ls) for extend(Ls); None where it
        is changed otherwise (insert, an item assigned)."""
        scope = self.names.scopes.get(node)
        if scope is None:
            return []
        found = []
        for access in scope.accesses[node.value] if node.value in scope.accesses else ():
            parent = self.names.parents.get(access.node)
            call = self.names.parents.get(parent) if isinstance(parent, cst.Attribute) else None
            if isinstance(call, cst.Call) and call.func is parent:
                kind = {"append": "one", "extend": "many"}.get(parent.attr.value)
                if kind is not None and len(call.args) == 1:
                    found.append((kind, call.args[0].value))
                elif kind is not None or parent.attr.value in ("insert", "__setitem__"):
                    return None
            elif isinstance(parent, cst.Subscript) and \
                    isinstance(self.names.parents.get(parent), cst.AssignTarget):
                return None
        return found

    def _named(self, node, depth: int, read) -> bool:
        """A local whose every assignment (and `+=`) is what read accepts;
        for a list, what it is grown by too."""
        if not isinstance(node, cst.Name):
            return False
        values = self._values(node)
        grown = self._grown(node)
        if not values or grown is None or grown and read != self.many:
            return False
        return all(read(v, depth + 1) for v in values) and \
            all((self.one if kind == "one" else self.many)(v, depth + 1) for kind, v in grown)


def _string_args(f: cst.FunctionDef, call: cst.Call) -> dict[str, str]:
    """f's parameters that the call gives a string literal (or leaves to a
    string default)."""
    from ._facts import _string
    params = list(f.params.params) + list(f.params.kwonly_params)
    given: dict[str, cst.BaseExpression] = {}
    plain = [a for a in call.args if a.keyword is None and not a.star]
    for p, a in zip(f.params.params, plain):
        given[p.name.value] = a.value
    for a in call.args:
        if a.keyword is not None:
            given[a.keyword.value] = a.value
    found = {}
    for p in params:
        value = given.get(p.name.value, p.default)
        text = _string(value) if value is not None else None
        if text is not None:
            found[p.name.value] = text
    return found
