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
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

_DESCENDING = m.Call(func=m.Name("range"), args=[
    m.Arg(value=m.BinaryOperation(operator=m.Subtract(), right=m.Integer("1"))),
    m.Arg(value=m.UnaryOperation(operator=m.Minus(), expression=m.Integer("1"))),
    m.Arg(value=m.UnaryOperation(operator=m.Minus(), expression=m.Integer("1")))])


class RowMajor:
    """Reads layout expressions in one module."""

    def __init__(self, module: cst.Module, names):
        self.names = names
        self.functions: dict[str, list[cst.FunctionDef]] = {}
        for f in m.findall(module, m.FunctionDef()):
            self.functions.setdefault(f.name.value, []).append(f)

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
        """node calls a function of the module (every one of that name)
        whose every return is what read accepts."""
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name)):
            return False
        returns = [r for f in self.functions.get(node.func.value, [])
                   for r in m.findall(f, m.Return())]
        return bool(returns) and all(r.value is not None and read(r.value, depth + 1)
                                     for r in returns)

    def _named(self, node, depth: int, read) -> bool:
        """A local whose every assignment (and `+=`) is what read accepts."""
        if not isinstance(node, cst.Name):
            return False
        values = []
        for a in self.names._assignments(node) or []:
            target = getattr(a, "node", None)
            parent = self.names.parents.get(target) if isinstance(target, cst.Name) else None
            if isinstance(parent, cst.AugAssign) and isinstance(parent.operator, cst.AddAssign):
                values.append(parent.value)
                continue
            statement = self.names.parents.get(parent) if isinstance(parent, cst.AssignTarget) \
                else None
            if not isinstance(statement, cst.Assign):
                return False
            values.append(statement.value)
        return bool(values) and all(read(v, depth + 1) for v in values)
