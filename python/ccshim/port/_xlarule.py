"""One XlaBuilder translation rule, ``def rule(c, *operands, **params)``,
written as an MLIR lowering rule, ``def rule(ctx, *operands, **params)``
(``_translation`` finds the rules and registers them).

What XLA made of the rule's builder calls, in today's API:

- ``c.get_shape(x)``, x the rule's operand i: its aval, ``ctx.avals_in[i]``;
  that shape's ``.dimensions()``, ``.element_type()`` / ``.numpy_dtype()``
  and ``.rank()`` are the aval's ``.shape``, ``.dtype`` and ``.ndim``.
- ``ops.ConstantLiteral(c, v)`` / ``ops.Constant(c, v)``: a constant of
  NumPy's array of v (XlaBuilder's literal: a Python int is int64, whatever
  jax_enable_x64 says), ``mlir.ir_constant(np.asarray(v))``.
- ``Shape.array_shape(dtype, dims, minor_to_major)``: the same three as a
  small named tuple the patch adds to the module (``SHAPE``), which gives
  the layout and the MLIR type ffi_lowering takes; ``Shape.tuple_shape(s)``
  as the result shape of the call: several results, ``s``.
- ``ops.CustomCallWithLayout(c, name, operands=, shape_with_layout=,
  operand_shapes_with_layout=)``: ``jax.ffi.ffi_lowering(name,
  operand_layouts=, result_layouts=, result_types=,
  skip_ffi_layout_processing=True)(ctx, *operands)``, the layouts (minor to
  major) and types those shapes gave; ``ops.CustomCall`` (XLA's default
  layouts, row-major) without the layouts.  The call must be returned (its
  results are the primitive's, a tuple's elements in order).

Anything else of XlaBuilder's in the rule is refused with where it is, and
the rule is left as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import re
from typing import Callable

import libcst as cst
import libcst.matchers as m

from .._pyread import starred as _starred
from ._facts import _arg, _string

SHAPE = "_ArrayShape"
# XlaBuilder Shape methods -> the aval's attribute
_SHAPE_METHODS = {"dimensions": "shape", "element_type": "dtype", "numpy_dtype": "dtype",
                  "rank": "ndim"}
_CUSTOM_CALLS = {"ops.CustomCall": ("shape", 3), "ops.CustomCallWithLayout":
                 ("shape_with_layout", 3)}
_TRANSLATED = {"ops.ConstantLiteral", "ops.Constant", "Shape.array_shape", "Shape.tuple_shape",
               *_CUSTOM_CALLS}
_WIDTH = 99      # the longest line the lowering writes, where it can
_CPU_VERSIONS = {"API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING", "1", "2"}


class Refused(Exception):
    """A construct the rule uses that is not translated: where (its node)
    and why."""

    def __init__(self, node: cst.CSTNode, why: str):
        super().__init__(why)
        self.node, self.why = node, why


@dataclass
class Names:
    """How the module spells what the lowering uses."""
    # "ops.X", "Shape.X", "client.X" (another name of xla_client's) or None
    xla: Callable[[cst.BaseExpression], str | None]
    mlir: str = "mlir"
    np: str = "np"
    ported: set[str] = field(default_factory=set)
    legacy: set[str] = field(default_factory=set)


def _code(node: cst.CSTNode) -> str | None:
    """node's code on one line (its layout inside a call's parentheses
    does not survive being moved out of them); None where a comment in it
    would be lost."""
    if m.findall(node, m.Comment()):
        return None
    code = " ".join(cst.Module([]).code_for_node(node).split())
    return re.sub(r"\s+([)\]])", r"\1", re.sub(r"([(\[])\s+", r"\1", code))


class _Align(cst.CSTTransformer):
    """Continuation lines aligned at a column (after `name = (`)."""

    def __init__(self, column: int):
        super().__init__()
        self.column = column

    def leave_ParenthesizedWhitespace(self, original, updated):
        return updated.with_changes(indent=True,
                                    last_line=cst.SimpleWhitespace(" " * self.column))


def _is_get_shape(node: cst.BaseExpression, c: str) -> bool:
    return m.matches(node, m.Call(func=m.Attribute(value=m.Name(c), attr=m.Name("get_shape"))))


class _Check(cst.CSTVisitor):
    """Refuses (raises) what the translation does not take, before anything
    is changed: the builder or a shape used otherwise, a tuple shape not
    given to the call, the call's op not returned."""

    def __init__(self, rule: "Rule"):
        self.rule = rule
        self.allowed: set[int] = set()      # ids of the Name nodes used as translated

    def visit_Call(self, node: cst.Call) -> None:
        r = self.rule
        func = node.func
        if m.matches(func, m.Attribute(value=m.Name(r.c))):
            if func.attr.value != "get_shape":
                raise Refused(node, f"uses {r.c}.{func.attr.value}, which it does not translate")
            if id(node) not in r.shape_calls:
                raise Refused(node, "uses a get_shape result otherwise than for its dimensions, "
                              "element type and rank")
            x = node.args[0].value if len(node.args) == 1 else None
            if not isinstance(x, cst.Name) or x.value not in r.operands:
                raise Refused(node, "uses get_shape of what is not one of its named operands")
            self.allowed.add(id(func.value))
            return
        if isinstance(func, cst.Attribute) and func.attr.value in _SHAPE_METHODS and \
                _is_get_shape(func.value, r.c):
            r.shape_calls.add(id(func.value))
        if isinstance(func, cst.Attribute) and func.attr.value in _SHAPE_METHODS and (
                _is_get_shape(func.value, r.c) or
                isinstance(func.value, cst.Name) and func.value.value in r.shape_vars):
            if node.args:
                raise Refused(node, f"uses {func.value.value}.{func.attr.value}(...) with "
                              "arguments")
            self.allowed.add(id(func.value))
            return
        kind = r.names.xla(func)
        if kind in ("ops.ConstantLiteral", "ops.Constant") or kind in _CUSTOM_CALLS:
            first = node.args[0].value if node.args else None
            if not m.matches(first, m.Name(r.c)):
                raise Refused(node, f"uses xla_client.{kind} on another builder than {r.c}")
            if kind.startswith("ops.Constant") and len(node.args) != 2:
                raise Refused(node, f"uses xla_client.{kind} with other arguments than (c, value)")
            self.allowed.add(id(first))

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)      # a keyword is no use of a name
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        kind = self.rule.names.xla(node)
        if kind is None:
            node.value.visit(self)  # x.attr: attr is no use of a name
            return False
        if kind not in _TRANSLATED and not kind.startswith("ops.CustomCallApiVersion."):
            raise Refused(node, f"uses xla_client.{kind.removeprefix('client.')}, which it does "
                          "not translate")
        return False

    def visit_Name(self, node: cst.Name) -> None:
        r = self.rule
        if id(node) in self.allowed:
            return
        if node.value == r.c:
            raise Refused(node, f"uses its builder {r.c} otherwise than in get_shape, "
                          "ConstantLiteral and CustomCall")
        if node.value in r.shape_vars and id(node) not in r.shape_targets:
            raise Refused(node, f"uses {node.value}, a get_shape result, otherwise than for "
                          "its dimensions, element type and rank")


class Rule:
    """A translation rule (a module-level def) and its lowering."""

    def __init__(self, fn: cst.FunctionDef, names: Names):
        self.fn, self.names = fn, names
        params = fn.params
        if not params.params or params.params[0].default is not None:
            raise Refused(fn, "has no builder parameter")
        self.c = params.params[0].name.value
        # operand i of the primitive: the rule's positional parameter i + 1
        self.operands = [p.name.value for p in params.params[1:]]
        self.star = params.star_arg.name.value if isinstance(params.star_arg, cst.Param) \
            else None
        self.shape_vars: set[str] = set()    # v = c.get_shape(x)
        self.shape_targets: set[int] = set()
        self.shape_calls: set[int] = set()   # get_shape calls whose result is so used
        self.tuples: dict[str, cst.BaseExpression] = {}   # v = Shape.tuple_shape(...)
        self._scan()
        if any(n.value == "ctx" for n in m.findall(fn, m.Name("ctx"))):
            raise Refused(fn, "already uses the name ctx")

    def _scan(self) -> None:
        for assign in m.findall(self.fn.body, m.Assign(targets=[m.AssignTarget(
                target=m.Name())])):
            target = assign.targets[0].target
            if m.matches(assign.value, m.Call(func=m.Attribute(value=m.Name(self.c),
                                                                attr=m.Name("get_shape")))):
                self.shape_vars.add(target.value)
                self.shape_targets.add(id(target))
                self.shape_calls.add(id(assign.value))
            elif isinstance(assign.value, cst.Call) and \
                    self.names.xla(assign.value.func) == "Shape.tuple_shape":
                self.tuples[target.value] = assign.value
        calls = [c for c in m.findall(self.fn.body, m.Call())
                 if self.names.xla(c.func) in _CUSTOM_CALLS]
        if not calls:
            raise Refused(self.fn, "makes no CustomCall")
        returns = {id(r.value) for r in m.findall(self.fn.body, m.Return())}
        for call in calls:
            if id(call) not in returns:
                raise Refused(call, "uses its CustomCall's op otherwise than by returning "
                              "it (GetTupleElement, another op's operand)")
            self._check_call(call)
        for name, value in self.tuples.items():
            uses = [n for n in m.findall(self.fn.body, m.Name(name))]
            if len(uses) != 2 or not any(
                    m.matches(_arg(c, 3, _CUSTOM_CALLS[self.names.xla(c.func)][0]),
                              m.Arg(value=m.Name(name))) for c in calls):
                raise Refused(value, "uses a tuple_shape otherwise than as its CustomCall's "
                              "result shape")
        self.fn.body.visit(_Check(self))

    def _check_call(self, call: cst.Call) -> None:
        kind = self.names.xla(call.func)
        if _starred(call):
            raise Refused(call, "passes its CustomCall arguments through *args or **kwargs, "
                          "which it cannot read")
        target = _arg(call, 1, "call_target_name")
        name = _string(target.value) if target else None
        if name is None:
            raise Refused(call, "calls a target that is not a literal")
        if name not in self.names.ported:
            why = "not ported (said above)" if name in self.names.legacy else \
                "whose kernel it found no source for"
            raise Refused(call, f"lowers '{name}', {why}")
        index = 8 if kind == "ops.CustomCallWithLayout" else 7
        version = _arg(call, index, "api_version")
        if version is not None:
            v = version.value
            text = v.attr.value if isinstance(v, cst.Attribute) else (
                v.value if isinstance(v, cst.Integer) else "")
            if text not in _CPU_VERSIONS:
                raise Refused(call, "calls with an API version other than 1 or 2 on a "
                              "ported CPU target")
        schedule = _arg(call, index - 1, "schedule")
        if schedule is not None:
            raise Refused(call, "calls with a schedule")
        if _arg(call, 2, "operands") is None or _arg(call, 3, _CUSTOM_CALLS[kind][0]) is None:
            raise Refused(call, "calls without operands or a result shape")
        shape = _arg(call, 3, _CUSTOM_CALLS[kind][0]).value
        if isinstance(shape, cst.Call) and self.names.xla(shape.func) not in (
                "Shape.array_shape", "Shape.tuple_shape"):
            raise Refused(shape, "gives its CustomCall a result shape made otherwise than by "
                          "Shape.array_shape / tuple_shape")

    def lowering(self) -> cst.FunctionDef:
        """The rule as an MLIR lowering rule."""
        body = self.fn.body.visit(_Lower(self))
        params = self.fn.params.params
        first = params[0].with_changes(name=cst.Name("ctx"))
        return self.fn.with_changes(body=body, params=self.fn.params.with_changes(
            params=[first, *params[1:]]))


class _Lower(cst.CSTTransformer):
    def __init__(self, rule: Rule):
        super().__init__()
        self.rule = rule
        self.hoisted: list[cst.BaseStatement] = []
        self.note: list[str] | None = None   # comment lines above the call's statement
        keywords = {id(a.keyword) for a in m.findall(rule.fn, m.Arg()) if a.keyword}
        self.used: set[str] = {n.value for n in m.findall(rule.fn, m.Name())
                               if id(n) not in keywords}

    def _fresh(self, name: str) -> str:
        while name in self.used:
            name += "_"
        self.used.add(name)
        return name

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        r, names = self.rule, self.rule.names
        func = original.func
        if m.matches(func, m.Attribute(value=m.Name(r.c), attr=m.Name("get_shape"))):
            x = original.args[0].value
            return cst.parse_expression(f"ctx.avals_in[{r.operands.index(x.value)}]")
        if isinstance(func, cst.Attribute) and func.attr.value in _SHAPE_METHODS and (
                _is_get_shape(func.value, r.c) or
                isinstance(func.value, cst.Name) and func.value.value in r.shape_vars):
            return cst.Attribute(updated.func.value, cst.Name(_SHAPE_METHODS[func.attr.value]))
        kind = names.xla(func)
        if kind in ("ops.ConstantLiteral", "ops.Constant"):
            asarray = cst.Call(cst.parse_expression(f"{names.np}.asarray"),
                               [cst.Arg(updated.args[1].value)])
            return cst.Call(cst.parse_expression(f"{names.mlir}.ir_constant"), [cst.Arg(asarray)])
        if kind == "Shape.array_shape":
            return updated.with_changes(func=cst.Name(SHAPE))
        if kind == "Shape.tuple_shape":
            return updated.args[0].value
        if kind in _CUSTOM_CALLS:
            return self._custom_call(original, updated, kind)
        return updated

    def _hoist(self, value: cst.BaseExpression, name: str) -> str:
        """A name for value: its own, or one it is assigned to before the
        call (on one line where it fits and has no comment, else laid out
        as it was, its lines aligned after the parenthesis)."""
        if isinstance(value, cst.Name):
            return value.value
        var = self._fresh(name)
        code = _code(value)
        if code is not None and len(f"        {var} = {code}") <= _WIDTH:
            self.hoisted.append(cst.parse_statement(f"{var} = {code}\n"))
            return var
        if not getattr(value, "lpar", None):
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        value = value.visit(_Align(len(f"{var} = (")))
        self.hoisted.append(cst.SimpleStatementLine([cst.Assign(
            targets=[cst.AssignTarget(cst.Name(var))], value=value)]))
        return var

    def _custom_call(self, original: cst.Call, updated: cst.Call, kind: str) -> cst.BaseExpression:
        r = self.rule
        shape_kw = _CUSTOM_CALLS[kind][0]
        target = _string(_arg(updated, 1, "call_target_name").value)
        operands = _arg(updated, 2, "operands").value
        shape_orig = _arg(original, 3, shape_kw).value
        shape = _arg(updated, 3, shape_kw).value
        kwargs = []
        if kind == "ops.CustomCallWithLayout":
            operand_shapes = self._hoist(_arg(updated, 4, "operand_shapes_with_layout").value,
                                            "operand_shapes")
            kwargs.append(f"operand_layouts=[s.layout() for s in {operand_shapes}]")
        several = (isinstance(shape_orig, cst.Call) and
                   r.names.xla(shape_orig.func) == "Shape.tuple_shape") or (
            isinstance(shape_orig, cst.Name) and shape_orig.value in r.tuples)
        if several:
            results = self._hoist(shape, "result_shapes")
            layouts = f"[s.layout() for s in {results}]"
            types = f"[s.ir_type() for s in {results}]"
        else:
            one = self._hoist(shape, "result_shape") if not isinstance(shape, cst.Name) \
                else shape.value
            layouts, types = f"[{one}.layout()]", f"[{one}.ir_type()]"
        if kind == "ops.CustomCallWithLayout":
            kwargs.append(f"result_layouts={layouts}")
        kwargs.append(f"result_types={types}")
        effect = _arg(updated, 6 if kind == "ops.CustomCallWithLayout" else 5, "has_side_effect")
        if effect is not None:
            kwargs.append(f"has_side_effect={_code(effect.value)}")
        if kind == "ops.CustomCall":
            # no layouts, as XlaBuilder gave none (XLA's defaults, row-major),
            # rather than ffi_lowering's from the primitive's avals
            kwargs.append("skip_ffi_layout_processing=True")
        ctx = "ctx"
        if kind == "ops.CustomCallWithLayout" and not self._as_given(operands):
            # ffi_lowering pairs the layouts with ctx.avals_in: the avals of
            # the call's operands, which are not the primitive's
            ctx = f"ctx.replace(avals_in=[s.aval() for s in {operand_shapes}])"
            self.note = ["ffi_lowering pairs the operand layouts with ctx.avals_in: here,",
                         "the avals of the call's own operands"]
        ops = None
        if isinstance(operands, (cst.Tuple, cst.List)) and all(
                _code(e.value) is not None for e in operands.elements):
            ops = ", ".join(("*" if isinstance(e, cst.StarredElement) else "") + _code(e.value)
                            for e in operands.elements)
        if ops is None or len(f"        {kwargs[-1]})({ctx}, {ops})") > _WIDTH:
            ops = f"*{self._hoist(operands, 'operands')}"
        args = "".join(f"\n    {a}," for a in [f'"{target}"', *kwargs])[:-1]
        if len(f"        {kwargs[-1]})({ctx}, {ops})") > _WIDTH:
            return cst.parse_expression(f"jax.ffi.ffi_lowering({args})(\n    {ctx},\n    {ops})")
        return cst.parse_expression(f"jax.ffi.ffi_lowering({args})({ctx}, {ops})")

    def _as_given(self, operands: cst.BaseExpression) -> bool:
        """Whether the call's operands are the rule's own, in order (then
        ctx.avals_in are theirs)."""
        if not isinstance(operands, (cst.Tuple, cst.List)):
            return False
        params = self.rule.operands + ([self.rule.star] if self.rule.star else [])
        given = [e.value.value if isinstance(e.value, cst.Name) else None
                 for e in operands.elements]
        stars = [isinstance(e, cst.StarredElement) for e in operands.elements]
        return given == params and stars == [False] * len(self.rule.operands) + (
            [True] if self.rule.star else [])

    def leave_SimpleStatementLine(self, original, updated):
        if not self.hoisted and self.note is None:
            return updated
        lines, self.hoisted = self.hoisted, []
        note = [cst.EmptyLine(comment=cst.Comment(f"# {line}")) for line in self.note or ()]
        self.note = None
        if not lines:
            return updated.with_changes(leading_lines=[*updated.leading_lines, *note])
        lines[0] = lines[0].with_changes(leading_lines=updated.leading_lines)
        return cst.FlattenSentinel([*lines, updated.with_changes(leading_lines=note)])

