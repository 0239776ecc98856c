"""XlaBuilder translation rules of ported targets, written as MLIR lowering
rules (``_xlarule`` translates one rule's body).

An old-style rule, ``rule(c, *operands, **params)``, registered as
``xla.backend_specific_translations[P][prim] = rule`` or
``xla.translations[prim] = rule`` (JAX 0.2 to 0.4.28's registries;
harmonica's form), whose CustomCall lowers ported targets becomes a lowering
rule registered with ``mlir.register_lowering(prim, rule, platform=P)``;
its results are the call's (a tuple's elements), as JAX's adapter of
old-style rules destructured them.  The module gets the
small shape type those rules use (``_xlarule.SHAPE``) before the first of
them, and the imports they need.  A rule it cannot translate is said with
where and why and left as it was, with its registration; so is a CustomCall
outside such a rule.  New-style rules, ``rule(ctx, avals_in, avals_out,
...)`` (``xla.register_translation``, ``_backend_specific_translations``),
are refused at their registration.

The work is in two passes, so that what is refused is said at its line in
the module as written: ``Translations(...)`` reads the module (before the
rest of the port edits it) and finds what it refuses (``said`` puts that
among the rest in line order); ``apply`` edits the ported module.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, PositionProvider

from ._facts import _arg, _string
from ._report import Problem
from ._xlarule import SHAPE, Names, Refused, Rule

_CLIENTS = ("jax.lib.xla_client", "jaxlib.xla_client", "jax._src.lib.xla_client")
_XLA = "jax.interpreters.xla"

_SHAPE_CLASS = f'''\
class {SHAPE}(NamedTuple):
    """An array's dtype, dimensions and layout (minor-to-major; None:
    row-major) as a translation rule gave them to XlaBuilder
    (xla_client.Shape.array_shape): the layout and type of a custom call's
    operand or result, for jax.ffi.ffi_lowering."""

    dtype: {{np}}.dtype
    dimensions: tuple
    minor_to_major: tuple = None

    def layout(self):
        if self.minor_to_major is None:
            return tuple(range(len(self.dimensions) - 1, -1, -1))
        return tuple(self.minor_to_major)

    def aval(self):
        return jax.core.ShapedArray(self.dimensions, self.dtype)

    def ir_type(self):
        return {{mlir}}.ir.RankedTensorType.get(
            self.dimensions, {{mlir}}.dtype_to_ir_type({{np}}.dtype(self.dtype)))
'''


_REGISTRIES = (f"{_XLA}.backend_specific_translations", f"{_XLA}._backend_specific_translations",
               "jax._src.interpreters.xla._backend_specific_translations")


def _platform_registry(facts, node: cst.BaseExpression):
    """(platform, new_style) where node is REGISTRY[P] of a per-platform
    registry; else None."""
    if isinstance(node, cst.Subscript) and isinstance(node.slice[0].slice, cst.Index):
        registry = facts.full(node.value) or ""
        if registry in _REGISTRIES:
            return node.slice[0].slice.value, registry.endswith("._backend_specific_translations")
    return None


def aliases(facts, module: cst.Module) -> dict:
    """Module-level names given a platform's registry, `_cpu_translations =
    _backend_specific_translations["cpu"]` (klujax's): name -> (platform,
    new_style)."""
    found = {}
    for stmt in module.body:
        for small in getattr(stmt, "body", ()) if isinstance(stmt, cst.SimpleStatementLine) \
                else ():
            if m.matches(small, m.Assign(targets=[m.AssignTarget(target=m.Name())])):
                registry = _platform_registry(facts, small.value)
                if registry is not None:
                    found[small.targets[0].target.value] = registry
    return found


def _registration(facts, node: cst.CSTNode, named: dict | None = None):
    """(prim, rule, platform, new_style) of a translation rule's
    registration statement; None for any other.  named: the module's
    aliases of a platform's registry."""
    if isinstance(node, cst.Assign) and len(node.targets) == 1 and \
            isinstance(node.targets[0].target, cst.Subscript):
        target = node.targets[0].target
        inner, prim = target.value, target.slice[0].slice
        if not isinstance(prim, cst.Index):
            return None
        if facts.full(inner) == f"{_XLA}.translations":
            return prim.value, node.value, None, False
        registry = _platform_registry(facts, inner) or (
            named.get(inner.value) if named and isinstance(inner, cst.Name) else None)
        if registry is not None:
            return prim.value, node.value, registry[0], registry[1]
    if isinstance(node, cst.Call) and facts.full(node.func) == f"{_XLA}.register_translation":
        # JAX 0.2.26 to 0.4.x: new-style rules, (ctx, avals_in, avals_out, ...)
        args = [a for a in node.args if a.keyword is None]
        platform = next((a.value for a in node.args
                         if a.keyword and a.keyword.value == "platform"), None)
        if len(args) >= 2:
            return args[0].value, args[1].value, platform, True
    return None


class Translations:
    """A module's translation rules: what is refused (said when made) and
    what ``apply`` translates."""

    def __init__(self, path: str, module: cst.Module, facts, ported: set[str],
                 legacy: set[str]):
        self.facts = facts
        self.problems: list[Problem] = []
        problems = self.problems
        wrapper = MetadataWrapper(module)
        positions = wrapper.resolve(PositionProvider)
        module = wrapper.module

        def where(node: cst.CSTNode) -> str:
            return f"{path}:{positions[node].start.line}"

        ops = {stmt.targets[0].target.value for stmt in m.findall(module, m.Assign(
            targets=[m.AssignTarget(target=m.Name())], value=m.Attribute(attr=m.Name("ops"))))
            if facts.full(stmt.value.value) in _CLIENTS}
        self.names = Names(xla=lambda node: self._xla(node, ops), ported=ported, legacy=legacy,
                           mlir=facts.local("jax.interpreters.mlir") or "mlir",
                           np=facts.local("numpy") or "np")
        functions = {f.name.value: f for f in module.body if isinstance(f, cst.FunctionDef)}
        self.aliases = aliases(facts, module)
        self.rules: set[str] = set()       # the rules translated
        seen: set[str] = set()             # every rule registered
        for node in m.findall(module, m.Assign() | m.Call()):
            found = _registration(facts, node, self.aliases)
            if found is None:
                continue
            _prim, rule, _platform, new_style = found
            name = rule.value if isinstance(rule, cst.Name) else None
            if new_style:
                problems.append(Problem(where(node), "a new-style translation rule (ctx, "
                                        "avals_in, avals_out, ...: xla.register_translation or "
                                        "_backend_specific_translations): not ported yet"))
            elif name not in functions:
                problems.append(Problem(where(node), "a translation rule it cannot follow to "
                                        "its def in this module: not ported yet"))
            elif name not in seen:
                try:
                    Rule(functions[name], self.names)
                    self.rules.add(name)
                except Refused as e:
                    problems.append(Problem(where(e.node), f"the translation rule {name} "
                                            f"{e.why}: kept as it was"))
            if name:
                seen.add(name)
        # The targets its XlaBuilder custom calls name: their handlers are
        # bound for counts known only at run time.
        self.targets: set[str] = set()
        for call in m.findall(module, m.Call()):
            if self.names.xla(call.func) not in ("ops.CustomCall", "ops.CustomCallWithLayout"):
                continue
            target = _arg(call, 1, "call_target_name")
            if target is not None and _string(target.value) is not None:
                self.targets.add(_string(target.value))
            if not self._in(call, [functions[n] for n in seen if n in functions]):
                problems.append(Problem(where(call), "an XlaBuilder CustomCall in no "
                                        "translation rule it follows to an old-style "
                                        "registration (xla.backend_specific_translations[P]"
                                        "[prim] = rule): not ported yet"))

    def said(self, problems: list[Problem], start: int) -> None:
        """What it refused, put among the problems said of the module from
        start on, in the order of their lines."""
        def line(p: Problem) -> int:
            return int(p.where.rsplit(":", 1)[1])
        for p in self.problems:
            at = next((i for i in range(start, len(problems)) if line(problems[i]) > line(p)),
                      len(problems))
            problems.insert(at, p)

    @staticmethod
    def _in(node: cst.CSTNode, functions: list[cst.FunctionDef]) -> bool:
        return any(c is node for f in functions for c in m.findall(f, m.Call()))

    def _xla(self, node: cst.BaseExpression, ops: set[str]) -> str | None:
        """"ops.X", "Shape.X" or "client.X" for what of xla_client's node
        names (through the module's imports and `x = xla_client.ops`)."""
        full = self.facts.full(node)
        if full is None:
            return None
        head, _, rest = full.partition(".")
        if head in ops and rest:
            return f"ops.{rest}"
        for client in _CLIENTS:
            if full.startswith(client + "."):
                rest = full[len(client) + 1:]
                return rest if rest.startswith(("ops.", "Shape.")) else f"client.{rest}"
        return None

    def apply(self, module: cst.Module) -> tuple[cst.Module, bool]:
        """module (the rest of the port done) with the rules translated and
        registered as lowerings; whether it changed."""
        if not self.rules:
            return module, False
        module = module.visit(_Apply(self))
        return _imports(module, self.facts, self.names), True


class _Apply(cst.CSTTransformer):
    def __init__(self, translations: Translations):
        super().__init__()
        self.t = translations
        self.depth = 0
        self.first: str | None = None      # the first rule translated

    def visit_FunctionDef(self, node):
        self.depth += 1

    def leave_FunctionDef(self, original, updated):
        self.depth -= 1
        if self.depth or updated.name.value not in self.t.rules:
            return updated
        self.first = self.first or updated.name.value
        return Rule(updated, self.t.names).lowering()

    def _lowering(self, node) -> cst.BaseExpression | None:
        found = _registration(self.t.facts, node, self.t.aliases)
        if found is None:
            return None
        prim, rule, platform, new_style = found
        if new_style or not isinstance(rule, cst.Name) or rule.value not in self.t.rules:
            return None
        code = cst.Module([]).code_for_node
        args = [code(prim), rule.value] + ([f"platform={code(platform)}"] if platform else [])
        call = f"{self.t.names.mlir}.register_lowering({', '.join(args)})"
        if len(call) > 88:
            call = f"{self.t.names.mlir}.register_lowering(\n    {', '.join(args)})"
        return cst.parse_expression(call)

    def leave_SimpleStatementLine(self, original, updated):
        body = []
        for stmt in updated.body:
            new = self._lowering(stmt) if isinstance(stmt, cst.Assign) else None
            body.append(cst.Expr(new) if new is not None else stmt)
        return updated.with_changes(body=body)

    def leave_Call(self, original, updated):
        return self._lowering(updated) or updated

    def leave_Module(self, original, updated):
        body = list(updated.body)
        at = next(i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef) and
                  s.name.value == self.first)
        shape = cst.parse_statement(_SHAPE_CLASS.format(np=self.t.names.np,
                                                        mlir=self.t.names.mlir))
        body[at:at] = [shape.with_changes(leading_lines=body[at].leading_lines)]
        body[at + 1] = body[at + 1].with_changes(
            leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
        return updated.with_changes(body=body)


def _imports(module: cst.Module, facts, names: Names) -> cst.Module:
    """module with the names the lowerings use imported: NamedTuple, NumPy
    and jax.interpreters.mlir as names spells them."""
    add = []
    if facts.local("typing.NamedTuple") is None:
        add.append("from typing import NamedTuple")
    if facts.local("numpy") is None:
        add.append(f"import numpy as {names.np}")
    body = list(module.body)
    if facts.local("jax.interpreters.mlir") is None:
        for i, stmt in enumerate(body):
            found = m.findall(stmt, m.ImportFrom(module=m.Attribute(
                value=m.Name("jax"), attr=m.Name("interpreters")))) if isinstance(
                stmt, cst.SimpleStatementLine) else []
            if found and not isinstance(found[0].names, cst.ImportStar):
                names_ = list(found[0].names)
                names_[-1] = names_[-1].with_changes(comma=cst.Comma(
                    whitespace_after=cst.SimpleWhitespace(" ")))
                names_.append(cst.ImportAlias(cst.Name(names.mlir)))
                names_.sort(key=lambda a: a.name.value)
                names_ = [a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(
                    " "))) for a in names_[:-1]] + [names_[-1].with_changes(
                        comma=cst.MaybeSentinel.DEFAULT)]
                body[i] = stmt.with_changes(body=[found[0].with_changes(names=names_)])
                break
        else:
            add.append(f"from jax.interpreters import {names.mlir}")
    if add:
        # at the head of the module's imports
        at = next((i for i, s in enumerate(body) if isinstance(s, cst.SimpleStatementLine) and
                   any(isinstance(x, (cst.Import, cst.ImportFrom)) and not m.matches(
                       x, m.ImportFrom(module=m.Name("__future__"))) for x in s.body)), 0)
        lines = [cst.parse_statement(line + "\n") for line in add]
        if at < len(body):
            lines[0] = lines[0].with_changes(leading_lines=body[at].leading_lines)
            body[at] = body[at].with_changes(leading_lines=())
        body[at:at] = lines
    return module.with_changes(body=body)
