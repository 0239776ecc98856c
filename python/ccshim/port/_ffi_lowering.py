"""The typed lowering a ported call site becomes: `mlir.custom_call(name,
operands=..., result_types=..., operand_layouts=..., ...)` (or jaxlib's
`hlo_helpers.custom_call`) rewritten as `jax.ffi.ffi_lowering(name, ...,
skip_ffi_layout_processing=True)(ctx, *operands)`, each argument it keeps on
its own line with its comments, as a maintainer would edit it. Which sites
are ported is _python.py's."""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

# The arguments of the legacy call that ffi_lowering does not take as they
# were: its operands go to the rule's call, its backend_config is the opaque
# attribute (GPU) or dropped (CPU, whose v1/v2 kernels never saw it), its
# api_version is the typed one.  Every other (layouts, has_side_effect,
# operand_output_aliases, called_computations, ...) is kept: ffi_lowering
# hands it to JAX's custom_call as the legacy call did.  result_types is
# kept too unless it is the avals' own (what ffi_lowering makes anyway).
_MOVED = frozenset({"operands", "backend_config", "api_version"})


def _uncommented(comma):
    """A comma's layout without the comment that follows it."""
    if not isinstance(comma, cst.Comma):
        return comma
    after = comma.whitespace_after
    if isinstance(after, cst.ParenthesizedWhitespace):
        after = after.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    return comma.with_changes(whitespace_after=after)


def _leading(call: cst.Call, arg: cst.Arg) -> list[cst.EmptyLine]:
    """The comment lines above an argument (kepler_jax's "# The inputs:"
    above its operands), which libcst keeps with what comes before it."""
    at = next(i for i, a in enumerate(call.args) if a is arg)
    before = call.whitespace_before_args if at == 0 else call.args[at - 1].comma
    space = before if at == 0 else getattr(before, "whitespace_after", None)
    if not isinstance(space, cst.ParenthesizedWhitespace):
        return []
    return [line for line in space.empty_lines if line.comment is not None]


def _kept(call: cst.Call, ctx: str) -> tuple[cst.Arg, list[cst.Arg]]:
    """The call's target argument, and the arguments ffi_lowering keeps (the
    target first, positional)."""
    name_arg = next(a for a in call.args
                    if a.keyword is None or a.keyword.value == "call_target_name")
    # [mlir.aval_to_ir_type(a) for a in ctx.avals_out], also as the port
    # writes that call for today's JAX (_plumbing.CALLS): ffi_lowering's own
    avals = m.ListComp(elt=m.Call(func=m.Attribute(attr=m.Name("aval_to_ir_type")) |
                                  m.Attribute(value=m.Attribute(attr=m.Name("RankedTensorType")),
                                              attr=m.Name("get"))),
                       for_in=m.CompFor(iter=m.Attribute(value=m.Name(ctx),
                                                         attr=m.Name("avals_out"))))
    kept: list[cst.Arg] = []
    for a in call.args:
        key = a.keyword.value if a.keyword else None
        if a is name_arg:
            kept.append(a.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT))
        elif key not in _MOVED and (key != "result_types" or not m.matches(a.value, avals)):
            kept.append(a)
        elif kept and isinstance(kept[-1].comma, cst.Comma):
            # A dropped argument's comment lines go with it; those after
            # it introduce the next argument, and now follow the kept one
            # before it (kepler_jax's "# Layout specification:").
            after = a.comma.whitespace_after if isinstance(a.comma, cst.Comma) and \
                a is not call.args[-1] else None
            comma = kept[-1].comma.with_changes(whitespace_after=after) if after \
                else _uncommented(kept[-1].comma)
            kept[-1] = kept[-1].with_changes(comma=comma)
    return name_arg, kept


def ffi_lowering(call: cst.Call, ctx: str, operands: cst.BaseExpression,
                 opaque: cst.Arg | None) -> cst.Call:
    """`jax.ffi.ffi_lowering(...)(ctx, *operands[, opaque])` of the legacy
    call."""
    name_arg, kept = _kept(call, ctx)
    notes = {a.keyword.value: _leading(call, a) for a in call.args
             if a.keyword and a.keyword.value in ("operands", "backend_config")}
    # Each argument keeps its own line; the new one goes last, with the
    # call's closing comma (or none, as the call had).
    # A kept argument keeps its own comma (and the comment after it);
    # one that had none (it was last) gets the name's, less its comment.
    between = _uncommented(name_arg.comma)
    last = call.args[-1]
    skip = cst.Arg(cst.Name("True"), keyword=cst.Name("skip_ffi_layout_processing"),
                   equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
                   comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
    args = [a.with_changes(comma=a.comma if isinstance(a.comma, cst.Comma) and
                           not a.deep_equals(last) else between,
                           whitespace_after_arg=cst.SimpleWhitespace(""))
            for a in kept] + [skip]
    lowering = cst.Call(func=cst.parse_expression("jax.ffi.ffi_lowering"), args=args,
                        whitespace_before_args=call.whitespace_before_args)
    if isinstance(operands, cst.BinaryOperation) and not operands.lpar:
        operands = operands.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    space = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    call_args = [cst.Arg(cst.Name(ctx), comma=space), cst.Arg(operands, star="*")]
    if opaque is not None:
        call_args = [call_args[0], call_args[1].with_changes(comma=space), opaque]
    above = [notes.get("operands", []), notes.get("backend_config", [])]
    if not any(above[:len(call_args) - 1]) or \
            not isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        return cst.Call(func=lowering, args=call_args)
    # The comments above the operands (and the opaque bytes) go with them:
    # an argument a line, at the legacy call's arguments' indentation.
    column = call.whitespace_before_args.last_line

    def line(comments) -> cst.ParenthesizedWhitespace:
        return cst.ParenthesizedWhitespace(empty_lines=comments, indent=True,
                                           last_line=column)
    call_args = [a.with_changes(comma=cst.Comma(whitespace_after=line(above[i])))
                 for i, a in enumerate(call_args[:-1])] + call_args[-1:]
    return cst.Call(func=lowering, args=call_args, whitespace_before_args=line([]))
