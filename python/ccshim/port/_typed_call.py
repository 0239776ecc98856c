"""Legacy call sites made typed in place: the call kept, its API version 4
and its backend_config the attributes its handler binds.

Three forms of a legacy call are ported so (which sites are ported is
_python.py's; the others become jax.ffi.ffi_lowering, _ffi_lowering.py):

- JAX's own `custom_call` (`jax._src.interpreters.mlir.custom_call`) where
  its layouts are not row-major.  `jax.ffi.ffi_lowering` cannot carry such
  a site's layouts: under skip_ffi_layout_processing=True it drops them for
  XLA's row-major defaults, and without it it zips them with the rule's
  avals, so a call with more results than its rule returns loses layouts
  (veros 1.7.0's CUDA TDMA: two results, the second a scratch row its rule
  drops, each laid out with its last dimension major).  So the site keeps
  its call (there in every JAX the port supports, what ffi_lowering itself
  calls), typed as ffi_lowering makes a call typed: `api_version=4` and
  its backend_config a dictionary of attributes (on GPU the legacy opaque
  bytes as `opaque`, which the ported handler binds; on CPU none).  A site
  calling another custom_call (jaxlib's hlo_helpers, `jax.interpreters.
  mlir`'s: gone from today's JAX) is refused, with the reason.
- `stablehlo.CustomCallOp(...)` built by hand (Enzyme-JAX, jax-triton):
  its api_version attribute 4, written as the site wrote the legacy one,
  and its backend_config `ir.DictAttr.get({...})` of those attributes.
- `jax.ffi.ffi_call(..., custom_call_api_version=N,
  legacy_backend_config=B)(*args)` (flash-attn-jax, brainevent): the two
  legacy arguments dropped, and on GPU B passed to the call as the
  attribute `opaque`.

Operands, results, layouts, aliases, side effects and the use of the
results stay as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

import libcst as cst

from . import _gpu_lowering
from .._pyread import attr_value, version_literal
from ._facts import _arg

# JAX's custom_call, which a typed call in place keeps.
KEPT = "jax._src.interpreters.mlir.custom_call"
_CUSTOM_CALLS = frozenset(f"{mod}.custom_call" for mod in (
    "jax.interpreters.mlir", "jaxlib.hlo_helpers", "jax._src.interpreters.mlir"))
_LEGACY_FFI = ("custom_call_api_version", "legacy_backend_config")


@dataclass(frozen=True)
class Form:
    """Where a legacy call of one form has its arguments: the (position,
    keyword) of its target name, operands and results (operands None: the
    arguments of the function it makes); the keyword of its API version,
    and the version where none is written (None: typed already); how many
    arguments it takes by position."""
    name: tuple[int, str]
    operands: tuple[int, str] | None
    results: tuple[int, str]
    version: str
    default: str | None
    positional: int


CUSTOM_CALL = Form((0, "call_target_name"), (-1, "operands"), (-1, "result_types"),
                   "api_version", "2", 1)
OP = Form((2, "call_target_name"), (1, "inputs"), (0, "result"), "api_version", "1", 3)
FFI_CALL = Form((0, "target_name"), None, (1, "result_shape_dtypes"),
                "custom_call_api_version", None, 2)


def form_of(full: str, call: cst.Call) -> Form | None:
    """The form of a legacy call, by the full name of what it calls; None
    for any other call (an ffi_call without legacy arguments is typed)."""
    if full in _CUSTOM_CALLS:
        return CUSTOM_CALL
    if re.search(r"(^|\.)CustomCallOp$", full):
        return OP
    if re.search(r"(^|\.)ffi_call$", full) and any(
            a.keyword is not None and a.keyword.value in _LEGACY_FFI for a in call.args):
        return FFI_CALL
    return None


def target(call: cst.Call, form: Form) -> cst.BaseExpression | None:
    """The expression of a call's target name (a CustomCallOp's
    `ir.StringAttr.get(NAME)` read as NAME); None where it cannot place it."""
    found = _arg(call, *form.name)
    return attr_value(found.value) if found is not None else None


def version(call: cst.Call, form: Form) -> str | None:
    """The API version a call gives, as its literal is written; None where
    it is written otherwise (a name, a computed value)."""
    found = _arg(call, 99, form.version)
    if found is None:
        return form.default
    written = version_literal(found.value)
    return written.value if written is not None else None


def operands(call: cst.Call, form: Form, made: cst.Call | None) -> cst.BaseExpression | None:
    """A call's operands (made: the call of the function an ffi_call makes,
    whose positional arguments they are, as a list)."""
    if form.operands is not None:
        found = _arg(call, *form.operands)
        return found.value if found is not None else None
    if made is None or any(a.star or a.keyword is not None for a in made.args):
        return None
    return cst.List([cst.Element(a.value) for a in made.args])


def unshown(rows, call: cst.Call) -> list[str]:
    """The layout arguments of call that rows (_layouts.RowMajor) cannot
    show row-major (the original node: its scopes are known)."""
    return [a.keyword.value for a in call.args if a.keyword is not None and
            a.keyword.value in ("operand_layouts", "result_layouts") and
            not rows.many(a.value)]


def refusal(odd: list[str], full: str) -> str:
    """Why a site whose layouts are odd, calling full, stays legacy."""
    return (f"a custom call whose {' and '.join(odd)} it cannot show row-major, through "
            f"{full or 'a custom_call it cannot name'}, not JAX's own {KEPT}: "
            "jax.ffi.ffi_lowering would give XLA other layouts, and no typed custom call "
            "keeps them there: kept legacy, its targets held")


def _keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value, keyword=cst.Name(name),
                   equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))


def _set(call: cst.Call, arg: cst.Arg) -> cst.Call:
    """call with the keyword argument arg in place of its own of that name,
    or added last on a line of its own where each argument has one (the
    call's closing comma, or none, kept)."""
    name = arg.keyword.value
    args = list(call.args)
    at = next((i for i, a in enumerate(args) if a.keyword and a.keyword.value == name), None)
    if at is not None:
        args[at] = args[at].with_changes(value=arg.value)
        return call.with_changes(args=args)
    if not args:
        return call.with_changes(args=[arg])
    last = args[-1]
    between = args[-2].comma if len(args) > 1 else cst.Comma(
        whitespace_after=cst.SimpleWhitespace(" "))
    if isinstance(last.comma, cst.Comma):   # a closing comma: the new one is last
        args.append(arg.with_changes(comma=last.comma))
        args[-2] = last.with_changes(comma=between)
    else:
        args[-1] = last.with_changes(comma=between)
        args.append(arg)
    return call.with_changes(args=args)


def drop(call: cst.Call, names: tuple[str, ...]) -> cst.Call:
    """call without its keyword arguments of those names, its last argument
    ending as its last did (a closing comma or none, the space before `)`)."""
    args = [a for a in call.args if not (a.keyword and a.keyword.value in names)]
    if args and args[-1] is not call.args[-1]:
        args[-1] = args[-1].with_changes(comma=call.args[-1].comma,
                                         whitespace_after_arg=call.args[-1].whitespace_after_arg)
    return call.with_changes(args=args)


def _attributes(config: cst.BaseExpression | None, gpu: bool, names: "Names") -> cst.Dict:
    """The attributes a ported handler binds, from the call's legacy opaque
    (config): {"opaque": the bytes as an array of uint8} on GPU, none on CPU."""
    if not gpu:
        return cst.Dict([])
    opaque = _gpu_lowering.opaque(config, names.numpy()).value
    value = cst.Call(func=cst.parse_expression(f"{names.mlir()}.ir_attribute"),
                     args=[cst.Arg(opaque)])
    return cst.Dict([cst.DictElement(cst.SimpleString('"opaque"'), value)])


def _typed_custom_call(call: cst.Call, gpu: bool, names: "Names") -> cst.Call:
    """JAX's custom_call typed: its backend_config the dictionary of
    attributes, and api_version=4."""
    config = _arg(call, 99, "backend_config")
    attrs = _attributes(config.value if config else None, gpu, names)
    call = _set(call, _keyword("backend_config", attrs))
    return _set(call, _keyword("api_version", cst.Integer("4")))


def _typed_op(call: cst.Call, gpu: bool, names: "Names") -> cst.Call:
    """A CustomCallOp typed: its api_version 4, written as its legacy one was
    (`mlir.i32_attr(4)` where it gave none), and its backend_config
    `ir.DictAttr.get(attributes)`, of the ir its StringAttr was made with
    (mlir.ir where it names none)."""
    config = _arg(call, 99, "backend_config")
    opaque = attr_value(config.value) if config is not None else None
    made_by = config.value.func.value if config is not None and opaque is not config.value \
        else None
    if isinstance(made_by, cst.Attribute):      # X of X.StringAttr.get(...)
        ir = made_by.value
    else:
        ir = cst.parse_expression(f"{names.mlir()}.ir")
    attrs = _attributes(opaque, gpu, names)
    made = cst.Call(func=cst.Attribute(cst.Attribute(ir, cst.Name("DictAttr")), cst.Name("get")),
                    args=[cst.Arg(attrs)])
    call = _set(call, _keyword("backend_config", made))
    given = _arg(call, 99, "api_version")
    if given is None:
        four = cst.parse_expression(f"{names.mlir()}.i32_attr(4)")
    else:
        four = given.value.deep_replace(version_literal(given.value), cst.Integer("4"))
    return _set(call, _keyword("api_version", four))


def _typed_ffi_call(made: cst.Call, gpu: bool, names: "Names") -> cst.Call:
    """`ffi_call(..., custom_call_api_version=N, legacy_backend_config=B)(*args)`
    typed: the legacy arguments dropped, and on GPU B given to the call as
    the attribute opaque."""
    config = _arg(made.func, 99, "legacy_backend_config")
    made = made.with_changes(func=drop(made.func, _LEGACY_FFI))
    if not gpu:
        return made
    return _set(made, _gpu_lowering.opaque(config.value if config else None, names.numpy()))


class Names(Protocol):
    """The module's names for jax.interpreters.mlir and numpy, each asked
    for only where the edit uses it (so that it imports only what it uses)."""

    def mlir(self) -> str: ...

    def numpy(self) -> str: ...


def typed(form: Form, call: cst.Call, gpu: bool, names: Names) -> cst.Call:
    """call (a legacy call of that form on ported targets; for an ffi_call,
    the call of the function it makes) typed in place, its backend_config
    the attributes its handler binds (GPU: {"opaque": the legacy opaque
    bytes}; CPU: none)."""
    if form is FFI_CALL:
        return _typed_ffi_call(call, gpu, names)
    if form is OP:
        return _typed_op(call, gpu, names)
    return _typed_custom_call(call, gpu, names)


def in_place(new: cst.BaseExpression) -> bool:
    """Whether new, a ported site, is a call typed in place (its op kept,
    `.results` and all), not an ffi_lowering (whose results it is)."""
    return isinstance(new, cst.Call) and _arg(new, 99, "api_version") is not None
