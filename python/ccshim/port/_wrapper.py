"""A project's own wrapper of custom_call, read as the call it wraps.

jax-finufft 0.1.0 lowers through one of its own:

    def custom_call(*args, **kwargs):
        try:
            return _custom_call(*args, **kwargs).results
        except TypeError:
            kwargs["out_types"] = kwargs.pop("result_types")
            return (_custom_call(*args, **kwargs),)

where `_custom_call` is jaxlib's `hlo_helpers.custom_call` and the handler
a fallback for older jaxlib, whose keyword was `out_types`.  A module-level
function of that shape (its parameters only `*args` and `**kwargs`, its
body `return C(*args, **kwargs).results`, alone or as the body of a `try`
whose handlers catch only TypeError, C a legacy custom_call) is a wrapper:
a call of it is a call site of C whose `.results` it gives, ported as one
(`jax.ffi.ffi_lowering(...)(ctx, ...)` gives those results), where its
module calls it and no other module of the tree names it.  The calls
inside it are then not sites, and once no call of it is left, the port
drops it, and with it the import of jaxlib's custom_call, gone from
today's JAX (_plumbing).  Any other function that forwards `*args` to a
custom_call (one another module imports, whose calls there the port does
not see) stays a site whose target it cannot read, said and held.

A rule that deletes its lowering context (`del ctx`) and whose site now
passes ctx to ffi_lowering keeps it: the `del` of ctx is dropped.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Callable

import libcst as cst
import libcst.matchers as m

from ._plumbing import _uses
from ._typed_call import CUSTOM_CALL, form_of


def _forwarded(node: cst.BaseStatement, args: str, kwargs: str,
               full: Callable[[cst.BaseExpression], str | None]) -> bool:
    """Whether node is `return C(*args, **kwargs).results`, C a legacy
    custom_call."""
    if not m.matches(node, m.SimpleStatementLine(body=[m.Return(value=m.Attribute(
            value=m.Call(args=[m.Arg(star="*", value=m.Name(args)),
                               m.Arg(star="**", value=m.Name(kwargs))]),
            attr=m.Name("results")))])):
        return False
    call = node.body[0].value.value
    return form_of(full(call.func) or "", call) is CUSTOM_CALL


def _is_wrapper(fn: cst.FunctionDef, full) -> bool:
    params = fn.params
    if params.params or params.posonly_params or params.kwonly_params or \
            not isinstance(params.star_arg, cst.Param) or params.star_kwarg is None:
        return False
    args, kwargs = params.star_arg.name.value, params.star_kwarg.name.value
    body = list(fn.body.body)
    if body and m.matches(body[0], m.SimpleStatementLine(body=[m.Expr(m.SimpleString())])):
        body = body[1:]      # its docstring
    if len(body) != 1:
        return False
    stmt = body[0]
    if isinstance(stmt, cst.Try):
        return len(stmt.body.body) == 1 and _forwarded(stmt.body.body[0], args, kwargs, full) \
            and stmt.orelse is None and stmt.finalbody is None and bool(stmt.handlers) and \
            all(m.matches(h.type, m.Name("TypeError")) for h in stmt.handlers)
    return _forwarded(stmt, args, kwargs, full)


def find(module: cst.Module, full: Callable[[cst.BaseExpression], str | None]) -> set[str]:
    """The names of the module's wrappers of a legacy custom_call."""
    return {s.name.value for s in module.body
            if isinstance(s, cst.FunctionDef) and _is_wrapper(s, full)}


def of(module: cst.Module, full: Callable[[cst.BaseExpression], str | None], dotted: str,
       tree: dict[str, Path]) -> set[str]:
    """The wrappers the port reads as the call they wrap: those the module
    calls, and no other module of the tree names.  Any other (one that
    another module calls, or none does) stays a call whose target it
    cannot read, which holds every target it may lower."""
    found = find(module, full)
    if not found:
        return found
    called = {c.func.value for c in m.findall(module, m.Call(func=m.Name()))}
    return (found & called) - named_elsewhere(found, dotted, tree)


def named_elsewhere(names: set[str], dotted: str, tree: dict[str, Path]) -> set[str]:
    """Those of names that another module of the tree imports from the
    module of that dotted name (`from .lowering import custom_call`, in
    parentheses or not) or reads as its attribute (`lowering.custom_call`,
    `pkg.lowering.custom_call`, through any name bound to it), read with
    Python's ast.  A module Python cannot parse names none: it cannot be
    imported either (jax-finufft's vendored FINUFFT has a Python 2
    script)."""
    found: set[str] = set()
    last = dotted.rpartition(".")[2]
    for other, path in tree.items():
        if other == dotted or found == names:
            continue
        try:
            module = ast.parse(path.read_text(errors="replace"))
        except (OSError, SyntaxError, ValueError):
            continue
        bound = {last}       # the names the module is read through here
        for node in ast.walk(module):
            if isinstance(node, ast.ImportFrom):
                source = (node.module or "").rpartition(".")[2]
                for alias in node.names:
                    if source == last and alias.name in names:
                        found.add(alias.name)
                    if alias.name == last:
                        bound.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                bound |= {a.asname for a in node.names
                          if a.asname and a.name.rpartition(".")[2] == last}
        found |= {node.attr for node in ast.walk(module)
                  if isinstance(node, ast.Attribute) and node.attr in names and (
                      isinstance(node.value, ast.Name) and node.value.id in bound or
                      isinstance(node.value, ast.Attribute) and node.value.attr == last)}
    return found


def drop(module: cst.Module, wrappers: set[str]) -> cst.Module:
    """module without those of its wrappers nothing in it calls any more
    (the comments above each go with it)."""
    uses = _uses(module)
    unused = {w for w in wrappers if uses.get(w, 0) == 1}     # (its def's own name)
    if not unused:
        return module
    body = [s for s in module.body
            if not (isinstance(s, cst.FunctionDef) and s.name.value in unused)]
    return module.with_changes(body=body)


class _KeepCtx(cst.CSTTransformer):
    def __init__(self, ctx: str):
        super().__init__()
        self.ctx = ctx
        self.dropped = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False          # (a nested function's own ctx is its own)

    def leave_Del(self, original: cst.Del, updated: cst.Del):
        target = updated.target
        kept = [e for e in target.elements if not m.matches(e.value, m.Name(self.ctx))] \
            if isinstance(target, (cst.Tuple, cst.List)) else None
        if m.matches(target, m.Name(self.ctx)) or kept == []:
            self.dropped = True
            return cst.RemoveFromParent()
        if kept is not None and len(kept) != len(target.elements):
            self.dropped = True
            if len(kept) == 1:        # `del x`, not the tuple `del x,`
                return updated.with_changes(target=kept[0].value)
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(target=target.with_changes(elements=kept))
        return updated

    def leave_SimpleStatementLine(self, original, updated):
        if not updated.body:
            return cst.RemoveFromParent()
        return updated


def keep_ctx(fn: cst.FunctionDef, ctx: str) -> cst.FunctionDef:
    """fn without a `del` of its parameter ctx, which a ported site now
    passes to ffi_lowering (jax-finufft's `del ctx`); a block left empty
    gets `pass`.  fn itself where it deletes no ctx."""
    keep = _KeepCtx(ctx)
    body = fn.body.visit(keep)
    if not keep.dropped:
        return fn
    if fn.body.body and m.matches(fn.body.body[0], m.SimpleStatementLine(
            body=[m.Del(target=m.Name(ctx))])) and body.body:
        # the blank line that set the del apart from what follows goes with it
        lead = body.body[0]
        body = body.with_changes(body=[lead.with_changes(leading_lines=[
            line for line in lead.leading_lines if line.comment is not None])] +
            list(body.body[1:]))
    for block in m.findall(body, m.IndentedBlock(body=[])):
        body = body.deep_replace(block, block.with_changes(body=[cst.SimpleStatementLine(
            [cst.Pass()])]))
    return fn.with_changes(body=body)
