"""Removed JAX plumbing a ported module imports: the imports of what today's
JAX no longer has, dropped once nothing uses them, and `import jax` (and
`jax.extend.core`) added where the port's edits use them; and the JAX
calls a project makes that today's JAX refuses (`mlir.ir_constant` of a
NumPy scalar, a JVP rule's None tangent), made as today's JAX takes them."""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from ._facts import _XLA_CLIENT, _Facts, _dotted

# Imports of what today's JAX no longer has, dropped once nothing uses them.
_REMOVED = _XLA_CLIENT | {"jax.core", "jaxlib.hlo_helpers", "jaxlib.hlo_helpers.custom_call"}
# Names JAX removed whose replacement is the same thing under another name
# (zero-change mode's table, python/ccshim/legacy/_restored.py): a
# `from M import NAME` of one becomes an import of today's, under the name
# the module uses (mpi4jax's sendrecv: `from jax import typeof as get_aval`).
# A call JAX took out of its public API (`from jax.interpreters.mlir import
# custom_call`, gone from JAX 0.8.0) is imported from where it still is, in
# jax._src, for the calls the port keeps legacy (a module with kernels it
# refuses); once nothing uses it, its import is dropped.
_MOVED = {"jax.core.get_aval": ("jax", "typeof"),
          "jax.interpreters.mlir.custom_call": ("jax._src.interpreters.mlir", "custom_call")}
_PRIVATE = frozenset(old for old, (module, _name) in _MOVED.items()
                     if module.startswith("jax._src."))


class _Plumbing(cst.CSTTransformer):
    """Drops the xla_client import (and `x = xla_client.ops`) that nothing
    uses any more; their names are gone from today's JAX."""

    def __init__(self, uses: dict[str, int]):
        super().__init__()
        self.uses = uses

    def _unused_client(self, alias: cst.ImportAlias, base: str) -> bool:
        local = alias.asname.name.value if alias.asname else _dotted(alias.name).split(".")[-1]
        full = f"{base}.{_dotted(alias.name)}" if base else _dotted(alias.name)
        return full in _REMOVED | _PRIVATE and self.uses.get(local, 0) == 0

    def leave_SimpleStatementLine(self, original, updated):
        body, moved = [], []
        for stmt in updated.body:
            if isinstance(stmt, cst.ImportFrom) and not isinstance(stmt.names, cst.ImportStar):
                base = _dotted(stmt.module) if stmt.module else ""
                names = []
                for a in stmt.names:
                    full = f"{base}.{_dotted(a.name)}"
                    today = _MOVED.get(full)
                    if self._unused_client(a, base):
                        continue
                    if today is not None:
                        local = a.asname.name.value if a.asname else _dotted(a.name)
                        line = cst.parse_statement(
                            f"from {today[0]} import {today[1]}" +
                            (f" as {local}" if local != today[1] else "") + "\n")
                        if full in _PRIVATE:
                            line = line.with_changes(leading_lines=[cst.EmptyLine(
                                comment=cst.Comment(f"# {full} left JAX's "
                                                    "public API; the legacy calls kept use it"))])
                        moved.append(line)
                    else:
                        names.append(a)
                if not names:
                    continue
                if len(names) != len(stmt.names):
                    names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                    stmt = stmt.with_changes(names=names)
            elif m.matches(stmt, m.Assign(targets=[m.AssignTarget(target=m.Name())],
                                          value=m.Attribute(attr=m.Name("ops")))):
                target = stmt.targets[0].target.value
                if self.uses.get(target, 0) == 0 and \
                        self.uses.get(_dotted(stmt.value.value), 0) == 0:
                    continue
            body.append(stmt)
        if moved:   # today's imports, where the removed ones were
            if body:
                return cst.FlattenSentinel([updated.with_changes(body=body)] + moved)
            moved[0] = moved[0].with_changes(leading_lines=updated.leading_lines)
            return cst.FlattenSentinel(moved)
        if not body:
            return cst.RemovalSentinel.REMOVE
        return updated.with_changes(body=body)


def _uses(module: cst.Module) -> dict[str, int]:
    """Names read, not counting the imports and `x = y.ops` that bind them."""
    class Count(cst.CSTVisitor):
        def __init__(self):
            self.uses: dict[str, int] = {}

        def visit_Import(self, node):
            return False

        def visit_ImportFrom(self, node):
            return False

        def visit_AssignTarget(self, node):
            return False

        def visit_Assign(self, node):
            if m.matches(node.value, m.Attribute(value=m.Name(), attr=m.Name("ops"))):
                return False
            return True

        def visit_Attribute(self, node):
            node.value.visit(self)     # `x` of x.y is read; `y` is no name
            return False

        def visit_Name(self, node):
            self.uses[node.value] = self.uses.get(node.value, 0) + 1

    count = Count()
    module.visit(count)
    return count.uses


def _import_jax(module: cst.Module, extend: bool, mlir: bool = False) -> cst.Module:
    """module with a top-level `import jax` (and `import jax.extend.core`,
    `import jax.interpreters.mlir`), before its first import from jax."""
    want = ["jax"] + (["jax.extend.core"] if extend else []) + \
        (["jax.interpreters.mlir"] if mlir else [])
    body = list(module.body)
    first = None
    for i, stmt in enumerate(body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for s in stmt.body:
            if isinstance(s, cst.Import):
                for alias in s.names:
                    if alias.asname is None and _dotted(alias.name) in want:
                        want.remove(_dotted(alias.name))
            if first is None and isinstance(s, (cst.Import, cst.ImportFrom)):
                name = _dotted(s.module) if isinstance(s, cst.ImportFrom) and s.module else (
                    _dotted(s.names[0].name) if isinstance(s, cst.Import) else "")
                if name and name.split(".")[0] in ("jax", "jaxlib"):
                    first = i
    if not want:
        return module
    if first is None:
        first = max((i + 1 for i, s in enumerate(body) if isinstance(s, cst.SimpleStatementLine)
                     and any(isinstance(x, (cst.Import, cst.ImportFrom)) for x in s.body)),
                    default=0)
    lines = [cst.parse_statement(f"import {name}\n") for name in want]
    if first < len(body):
        lines[0] = lines[0].with_changes(leading_lines=body[first].leading_lines)
        body[first] = body[first].with_changes(leading_lines=())
    body[first:first] = lines
    return module.with_changes(body=body)


# Names JAX removed whose replacement is an expression of today's JAX
# (zero-change mode's table, python/ccshim/legacy/_restored.py): each read
# of one (ATTRIBUTES) or call of one with a single argument X (CALLS) is
# written as today's; PREFIX is how the module wrote what came before the
# name's last two parts (`ad` of `ad.Zero.from_value`), MODULE what came
# before its last (`mlir` of `mlir.aval_to_ir_type`).
ATTRIBUTES = {"jax.core.Primitive": "jax.extend.core.Primitive",      # gone from 0.6.0
              "jax.interpreters.batching.moveaxis": "jax.numpy.moveaxis",
              "jax.interpreters.batching.not_mapped": "None"}
# (in a lowering rule, which has a lowering context, its call is today's
# given the context: _python)
AVAL_TO_IR_TYPE = ("jax.interpreters.mlir.aval_to_ir_type",
                   "jax._src.interpreters.mlir.aval_to_ir_type")
CALLS = {"jax.interpreters.ad.Zero.from_value": "PREFIX.Zero(jax.typeof(X).to_tangent_aval())",
         "jax.lax.zeros_like_array": "jax.lax.full_like(X, 0)",
         "jax.core.raise_to_shaped": "X",
         # takes the lowering context first since 0.10.1; an array's type
         # is made from the aval alone (MODULE: the module's name for mlir)
         **dict.fromkeys(AVAL_TO_IR_TYPE, "MODULE.ir.RankedTensorType.get(X.shape, "
                                          "MODULE.dtype_to_ir_type(X.dtype))")}


def renamed(facts: _Facts, node: cst.Attribute) -> cst.BaseExpression | None:
    """Today's expression for a removed name read (ATTRIBUTES); None for
    any other."""
    today = ATTRIBUTES.get(facts.full(node) or "")
    return cst.parse_expression(today) if today is not None else None


def replaced_call(facts: _Facts, call: cst.Call) -> cst.BaseExpression | None:
    """Today's expression for a call of a removed function with one
    argument (CALLS); None for any other."""
    today = CALLS.get(facts.full(call.func) or "")
    if today is None or len(call.args) != 1 or call.args[0].keyword or call.args[0].star:
        return None
    module = call.func.value if isinstance(call.func, cst.Attribute) else None
    prefix = module.value if isinstance(module, cst.Attribute) else None
    if ("PREFIX" in today and prefix is None) or ("MODULE" in today and module is None):
        return None
    new = cst.parse_expression(today).visit(_Replace("X", call.args[0].value))
    for placeholder, by in (("PREFIX", prefix), ("MODULE", module)):
        if by is not None:
            new = new.visit(_Replace(placeholder, by))
    return new


def numpy_parameters(facts: _Facts, names, call: cst.Call) -> list[str]:
    """The keyword parameters of `P.bind(...)` given a local the function
    assigns a NumPy value (`np.atleast_1d(x).astype(np.int64)`: jax-finufft's
    output_shape): unhashable, which a primitive refuses since JAX 0.7.0
    (zero-change mode passes them frozen; the port cannot, and says so)."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "bind"):
        return []
    found = []
    for a in call.args:
        if a.keyword is None or not isinstance(a.value, cst.Name):
            continue
        for value in names.values(a.value):
            while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
                    isinstance(value.func.value, cst.Call):
                value = value.func.value         # np.f(...).astype(...): np.f(...)
            if isinstance(value, cst.Call) and (facts.full(value.func) or "").startswith(
                    "numpy."):
                found.append(a.keyword.value)
                break
    return found


def ir_constant(facts: _Facts, call: cst.Call, numpy) -> cst.Call:
    """mlir.ir_constant(x) without aval=: since JAX 0.7.2 a Python scalar x
    needs its aval, and had the constant of its Python type's dtype (int:
    int64), which np.asarray(x) gives it; a NumPy value keeps its dtype.
    numpy(): the module's name for NumPy (imported where it has none:
    sphericart-jax's lowerings).  call itself where it is left."""
    if len(call.args) != 1 or call.args[0].keyword is not None:
        return call
    value = call.args[0].value
    called = facts.full(value.func) if isinstance(value, cst.Call) else None
    if called is not None and called.startswith("numpy."):
        return call          # np.int32(...), np.array(...): a NumPy value
    wrapped = cst.Call(func=cst.parse_expression(f"{numpy()}.asarray"), args=[cst.Arg(value)])
    return call.with_changes(args=[call.args[0].with_changes(value=wrapped)])


class _Replace(cst.CSTTransformer):
    """Puts an expression where a placeholder name is."""

    def __init__(self, placeholder: str, by: cst.BaseExpression):
        super().__init__()
        self.placeholder, self.by = placeholder, by

    def leave_Name(self, original, updated):
        return self.by if updated.value == self.placeholder else updated


def _one_per_line(t: cst.Tuple) -> cst.Tuple:
    """A parenthesized tuple laid out one element a line, as black would."""
    def line(extra: str) -> cst.ParenthesizedWhitespace:
        return cst.ParenthesizedWhitespace(indent=True, last_line=cst.SimpleWhitespace(extra))
    elements = [e.with_changes(comma=cst.Comma(whitespace_after=line(
        "" if i == len(t.elements) - 1 else "    "))) for i, e in enumerate(t.elements)]
    return t.with_changes(elements=elements, lpar=[cst.LeftParen(whitespace_after=line("    "))],
                          rpar=[cst.RightParen()])


# What zero_tangents makes of tangents with None in them: `tuple(Zero(...)
# if t is None else t for p, t in zip(...))`, left as it is by a second port.
_ZEROED = m.Call(func=m.Name("tuple"), args=[m.Arg(value=m.GeneratorExp(elt=m.IfExp(
    test=m.Comparison(comparisons=[m.ComparisonTarget(operator=m.Is(),
                                                      comparator=m.Name("None"))]),
    body=m.Call(func=m.Attribute(attr=m.Name("Zero"))))))])


def zero_tangents(value: cst.BaseExpression, ad: str | None) -> cst.BaseExpression | str | None:
    """What a JVP rule returns, `(primals, tangents)`, with each None output
    tangent (an error since JAX 0.5.0) the symbolic zero of that output,
    `ad.Zero(out.aval.to_tangent_aval())` (ad: the module's name for
    jax.interpreters.ad); None where no tangent is None; why not, where its
    outputs are not names it can follow."""
    if ad is not None and m.matches(value, m.Tuple(elements=[
            m.Element(value=m.Name()), m.Element(value=~m.Tuple())])) and \
            m.findall(value.elements[1].value, m.Name("None")) and \
            not m.matches(value.elements[1].value, _ZEROED):
        # tangents made by an expression with None in it: each None
        # replaced where it lands
        primals, tangents = (e.value for e in value.elements)
        # (libcst indents these lines by the statement's own indentation)
        fixed = cst.parse_expression(
            f"tuple(\n    {ad}.Zero(p.aval.to_tangent_aval()) if t is None else t\n"
            f"    for p, t in zip({primals.value}, TANGENTS)\n)")
        fixed = fixed.visit(_Replace("TANGENTS", tangents))
        return value.with_changes(elements=[value.elements[0],
                                            value.elements[1].with_changes(value=fixed)])
    if not m.matches(value, m.Tuple(elements=[m.Element(value=m.Tuple()),
                                              m.Element(value=m.Tuple())])):
        return None
    primals, tangents = (e.value for e in value.elements)
    if not any(m.matches(e.value, m.Name("None")) for e in tangents.elements):
        return None
    if ad is None or len(primals.elements) != len(tangents.elements) or not all(
            isinstance(e.value, cst.Name) for e in primals.elements):
        return ("a JVP rule gives None for an output's tangent (an error since JAX 0.5.0) and "
                "its outputs are not names it can follow: not ported")
    new = [t.with_changes(value=cst.parse_expression(
               f"{ad}.Zero({p.value.value}.aval.to_tangent_aval())"))
           if m.matches(t.value, m.Name("None")) else t
           for p, t in zip(primals.elements, tangents.elements)]
    tangents = tangents.with_changes(elements=new)
    if len(cst.Module([]).code_for_node(tangents)) > 48:
        tangents = _one_per_line(tangents)
    return value.with_changes(elements=[value.elements[0],
                                        value.elements[1].with_changes(value=tangents)])
