"""The Cython side of `ccshim scan`: a .pyx, .pxd or .pxi file read with
Cython's own parser, through the reader `ccshim port` ports Cython with
(ccshim/_pyx.py), each finding a record as the .py reader's are
(docs/contracts.md, section 4).

What it finds:

- each `cdef` function returning void, with its parameters as written
  (a `definition`; the command keeps those whose parameters are a legacy
  form, and says which);
- each call of a helper that makes a capsule and puts it in a mapping of
  the module's (`declare_custom_call_target("name", <void*>(kernel))`, whose
  body does `targets[fn_name] = PyCapsule_New(fn, ...)`): the capsule the
  module offers (`offered`), registered by whatever registers that mapping;
- each registration (`register_custom_call_target`, the CPU one, and
  `register_ffi_target`), by literal name: an early jaxlib helper named as
  the registration it wraps is its calls, each a registration, and its body
  none;
- each legacy call site and `ffi_call`, as the .py reader reads them.

A name it cannot read as a literal is a computed name, said as written;
the .py reader's other shapes (loops over mappings, names passed into a
function of the project's own) are not followed in Cython.  Each argument
is read as the .py reader reads it, once Cython's casts (`<void*>`) and
address-of are taken off, so that `<void*>(kernel)` names `kernel`.
"""

from __future__ import annotations

import ast
import re

import libcst as cst

from .. import _pyx
from . import _text
from ._reader import (_CUSTOM_CALL, _PLATFORMS, _REGISTER, OPAQUE_KEYWORDS, Finding,
                      registration_api, site_defaults)

_WORDS = _REGISTER + _CUSTOM_CALL + ("ffi_call",)
# A Cython cast (<void*>, <const char*>, <uintptr_t>) and an address-of.
_CAST = re.compile(r"<\s*[A-Za-z_][\w\s]*\**\s*>")
_ADDRESS = re.compile(r"(?<![\w)\]\s])\s*&|^&")


def _python(arg: _pyx.Arg | None) -> cst.BaseExpression | None:
    """The argument as a Python expression, its casts taken off; None where
    it is none, or not Python once they are.  CPython's own parser judges
    first: libcst's has no bound on nesting (an argument of 170000 nested
    calls overflows its stack), CPython's refuses past 200 levels."""
    if arg is None:
        return None
    text = _ADDRESS.sub("", _CAST.sub("", arg.text)).strip()
    try:
        ast.parse(text, mode="eval")
        return cst.parse_expression(text)
    except (SyntaxError, cst.ParserSyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _version(arg: _pyx.Arg) -> int:
    node = _python(arg)
    return _text.version(node) if node is not None else -1


def _name(f: Finding, arg: _pyx.Arg | None) -> None:
    if arg is None:
        return
    if arg.literal is not None:
        f.name = arg.literal
    else:
        f.name_expr = arg.text


def _kernel(f: Finding, arg: _pyx.Arg | None) -> None:
    if arg is not None:
        node = _python(arg)
        f.expr, f.function = arg.text, _text.function(node) if node is not None else ""


def _by(call: _pyx.Call, index: int, key: str | None = None) -> _pyx.Arg | None:
    """The argument by keyword, else by position."""
    if key is not None and key in call.keywords:
        return call.keywords[key]
    return call.args[index] if index < len(call.args) else None


def _registration(call: _pyx.Call) -> Finding | None:
    cpu_only = call.word == "register_cpu_custom_call_target"
    api = registration_api(call.word)
    if "api_version" in call.keywords:
        api = _version(call.keywords["api_version"])
    if api < 0:
        return None     # a wrapper passing its caller's choice on
    target = _by(call, 0, "name")
    if target is not None and target.literal is None and call.within in _REGISTER and \
            target.text in call.params:
        return None     # the body of a helper named as the registration it wraps
    f = Finding("registration" if api == 0 else "typed", call.line, call.word)
    _name(f, target)
    _kernel(f, _by(call, 1, "fn"))
    where = call.keywords.get("platform") or (None if cpu_only else _by(call, 2))
    f.platform = "cpu" if cpu_only or where is None else \
        _PLATFORMS.get((where.literal or "").lower(), "unknown")
    return f


def _call_site(call: _pyx.Call) -> Finding:
    f = Finding("call_site", call.line, call.word)
    at, default = site_defaults(call.word)
    _name(f, _by(call, at, "call_target_name"))
    f.version, f.version_default = default, 1
    if "api_version" in call.keywords:
        f.version, f.version_default = max(_version(call.keywords["api_version"]), 0), 0
    opaque = next((call.keywords[k] for k in OPAQUE_KEYWORDS if k in call.keywords), None)
    f.opaque = opaque.text if opaque is not None else ""
    if f.version == 4:
        f.kind = "typed"
    return f


def _ffi_call(call: _pyx.Call) -> Finding:
    api = 4
    if "custom_call_api_version" in call.keywords:
        api = _version(call.keywords["custom_call_api_version"])
    f = Finding("typed" if api == 4 else "call_site", call.line, call.word)
    f.version = max(api, 0)
    _name(f, _by(call, 0, "target_name"))
    shapes = _by(call, 1, "result_shape_dtypes")
    f.shapes = shapes.text if shapes is not None else ""
    opaque = call.keywords.get("legacy_backend_config")
    f.opaque = opaque.text if opaque is not None else ""
    return f


def _offered(call: _pyx.Call, helper: _pyx.Helper, module: str) -> Finding | None:
    """A call of a helper that puts a capsule in the module's mapping."""
    if len(call.args) < 2 or call.args[0].literal is None:
        return None
    f = Finding("offered", call.line, call.word, name=call.args[0].literal, module=module,
                mapping=helper.mapping or "<its dict>")
    _kernel(f, call.args[1])
    return f


def read(shown: str, text: str) -> list[Finding]:
    """The findings of one Cython file, in its order; _pyx.Unreadable where
    Cython's parser does not take it (or there is no Cython)."""
    base = shown.rsplit("/", 1)[-1]
    module = base.split(".", 1)[0]
    pyx = _pyx.Pyx(module, text, pxd=base.endswith(".pxd"))
    found: list[tuple[int, Finding]] = []
    for fn in pyx.functions.values():
        if fn.returns_void:
            found.append((fn.start, Finding("definition", fn.line, "definition", name=fn.name,
                                            function=fn.name,
                                            expr=re.sub(r"\s+", " ", fn.params).strip())))
    makers = {name: h for name, h in pyx.helpers.items() if not h.registers}
    for call in pyx.calls_of(set(_WORDS) | set(makers)):
        if call.word in makers:
            f = _offered(call, makers[call.word], module)
        elif call.word in _REGISTER:
            f = _registration(call)
        elif call.word == "ffi_call":
            f = _ffi_call(call)
        else:
            f = _call_site(call)
        if f is not None:
            found.append((call.at, f))
    return [f for _, f in sorted(found, key=lambda x: x[0])]
