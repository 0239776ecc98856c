"""The native side of a port: pybind11 extensions that export legacy kernels
in a ``registrations()`` dict of capsules (dfm/extending-jax's pattern).

Beside each registered CPU kernel ``void f(void* out, const void** in)`` the
port adds a typed XLA FFI handler that calls it unchanged (through
``xla_legacy_call.h``, which the patch adds beside the source), and the dict
exports the handler's capsule instead of the kernel's, under the same name.
CUDA/HIP kernels get a GPU handler the same way (_gpu).  What it does not
port (kernels it finds no source for, other signatures) is reported with
where and why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from . import _binding, _gpu
from ._cxxnames import base_name
from ._report import Problem

HEADER = "xla_legacy_call.h"
SOURCES = (".cc", ".cpp", ".cxx", ".cu", ".cu.cc", ".h", ".hpp", ".cuh")

# A kernel's name in an entry: qualified, perhaps a template's instance
# (kepler_jax's cpu_kepler<float>).
_FUNCTION = r"([A-Za-z_][\w:]*(?:\s*<[^<>;()]*>)?)"
# dict["name"] = EncapsulateFunction(fn);  (or any one-argument wrapper)
_ENTRY = re.compile(r'(\w+)\s*\[\s*"([^"]+)"\s*\]\s*=\s*(\w+)\s*\(\s*' + _FUNCTION +
                    r'\s*\)\s*;')
# m.def("name", []() { return EncapsulateFunction(fn); })  (celerite2's form:
# a module function that returns the capsule), or one that makes the
# capsule itself, after statements of its own (klujax's
# `{ const char *name = "..."; return py::capsule((void *)&fn, name); }`)
_CAPSULE = r"(?:(?:py|pybind11|nb|nanobind)::capsule)"
# (a handler's name is a pointer to it, XLA_FFI_DEFINE_HANDLER's: the `&`
# of `&fn` is part of what the port replaces, group 3)
_EXPORT = re.compile(r'\.def\s*\(\s*"(\w+)"\s*,\s*\[\]\s*\(\s*\)\s*\{[^{}]*?\breturn\s+' +
                     r"(" + _CAPSULE + r"|\w+)\s*\(\s*(?:\(\s*void\s*\*\s*\)\s*)?(&\s*)?" +
                     _FUNCTION + r"\s*(?:\)|,[^;{}]*\))\s*;\s*\}")
_MODULE = re.compile(r"(?:PYBIND11_MODULE|NB_MODULE)\s*\(\s*(\w+)\s*,")
_MODULE_LINE = re.compile(r"^[ \t]*(?:PYBIND11_MODULE|NB_MODULE)\s*\(", re.M)
_DICT_FN = re.compile(r"^[ \t]*(?:pybind11::|py::|nb::|nanobind::)?dict\s+\w+\s*\([^)]*\)\s*\{",
                      re.M)
_STATUS_INCLUDE = re.compile(
    r'^#include\s*([<"])((?:tensorflow/compiler/)?xla/service/custom_call_status\.h)[>"]', re.M)
_TYPED = re.compile(r"XLA_FFI_DEFINE_HANDLER(?:_SYMBOL)?\s*\(\s*(\w+)\s*,")
_PLATFORM_STREAM = re.compile(r"PlatformStream<\s*(\w+(?:\s*\*)?)\s*>")


def _typed_platform(text: str, handler: str, registered: set[str] | None) -> str:
    """The platform of a typed handler defined in text: the one of the
    stream it binds (Ctx<PlatformStream<cudaStream_t>>: cuda; a void*: the
    platform its module is registered for), else cpu."""
    m = re.search(r"XLA_FFI_DEFINE_HANDLER(?:_SYMBOL)?\s*\(\s*" + re.escape(handler) +
                  r"\s*,(.*?)\);", text, re.S)
    stream = _PLATFORM_STREAM.search(m.group(1)) if m else None
    if stream and re.fullmatch(r"void\s*\*", stream.group(1)):
        return _gpu.registered_platform(registered) or "other"
    return _gpu.PLATFORM.get(stream.group(1), "other") if stream else "cpu"


@dataclass
class Kernel:
    target: str          # the name it is registered under
    function: str        # the C++ function the dict exports
    params: list[str]    # its parameters, as written
    where: str           # path:line of its definition
    status: bool = False  # it reports through an XlaCustomCallStatus
    stream: str | None = None  # a GPU kernel's stream type (cudaStream_t, hipStream_t)
    counts: _binding.Counts | None = None  # (operands, results), where every call fixes them


@dataclass
class Extension:
    """One source file with a registrations dict."""
    path: Path
    module: str | None                       # the Python module it builds, if said
    ported: list[Kernel] = field(default_factory=list)
    legacy: list[str] = field(default_factory=list)   # targets left legacy
    typed: list[str] = field(default_factory=list)    # targets already typed
    text: str | None = None                  # the new text, when ported
    status_header: str | None = None         # the status header it includes, to add
    platforms: dict[str, str] = field(default_factory=dict)  # target -> its kernel's platform
    # its capsules are returned by module functions (m.def("f", ...)): the
    # names are the functions', not target names
    functions: bool = False
    # capsules made by hand, by the member that holds each: ported or not
    capsules: dict[str, bool] = field(default_factory=dict)


def _code(text: str) -> str:
    """text with its comments blanked (the same length, lines kept), so that
    an entry commented out is not read as one."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text,
                  flags=re.S)


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _params(text: str, function: str) -> tuple[list[str], int] | None:
    """The parameters of `void function(...)` defined or declared in text
    (a template's, for an instance of it), and where; None when it is not
    there."""
    name = base_name(function)
    m = re.search(r"\b(?:void|auto)\s+" + re.escape(name) + r"\s*\(([^)]*)\)", text)
    if not m:
        return None
    params = [p.strip() for p in m.group(1).split(",") if p.strip()]
    return params, m.start()


def _kind(params: list[str]) -> str:
    joined = " ".join(params)
    if re.search(r"\b(cudaStream_t|hipStream_t|CUstream)\b", joined):
        return _gpu.kind(params)
    if len(params) == 2 and "**" in params[1].replace(" ", ""):
        return "cpu"
    if len(params) == 3 and "XlaCustomCallStatus" in params[2]:
        return "cpu-status"
    if len(params) == 5:
        return "cpu-v3"
    return "other"


def _find_kernel(function: str, path: Path, text: str, sources: dict[Path, str],
                 root: Path) -> tuple[list[str], str] | None:
    found = _params(text, function)
    if found:
        return found[0], f"{path.relative_to(root)}:{_line(text, found[1])}"
    for other, other_text in sources.items():
        found = _params(other_text, function)
        if found:
            return found[0], f"{other.relative_to(root)}:{_line(other_text, found[1])}"
    return None


def _handler_name(function: str) -> str:
    """The handler's name: the kernel's, with a template instance's
    arguments spelt in (cpu_kepler_float_ffi)."""
    args = re.search(r"<(.*)>", function)
    spelt = "_" + re.sub(r"\W+", "_", args.group(1)).strip("_") if args else ""
    return base_name(function) + spelt + "_ffi"


def _entries(text: str) -> list[tuple[re.Match, str, str, tuple[int, int]]]:
    """Each capsule the source exports: (match, target, function, the span
    of the function's name), a dict's entries then module functions'."""
    found = [(m, m.group(2), m.group(4), m.span(4)) for m in _ENTRY.finditer(text)]
    if _DICT_FN.search(text):
        return found
    return found + [(m, m.group(1), m.group(4), (m.start(3) if m.group(3) else m.start(4),
                                                m.end(4))) for m in _EXPORT.finditer(text)]


def _returns_const_void(text: str, k: Kernel) -> bool:
    name = re.escape(base_name(k.function))
    return re.search(r"\bconst\s+void\s+" + name + r"\s*\(", text) is not None


def _called(text: str, k: Kernel) -> str:
    """What the handler calls: the kernel, or its plain-void caller."""
    return f"{_handler_name(k.function)[:-4]}_call" if _returns_const_void(text, k) \
        else k.function


def _const_void(text: str, k: Kernel) -> str:
    """A kernel declared `const void f(...)` has a function type of its own
    (GCC keeps the qualifier), which the handler's template does not take: a
    plain void function that calls it."""
    if not _returns_const_void(text, k):
        return ""
    status = ", XlaCustomCallStatus* status" if k.status else ""
    return (f"// (through a plain void function: {k.function} is declared const void)\n"
            f"static void {_called(text, k)}(void* out, const void** in{status}) {{\n"
            f"  {k.function}(out, in{', status' if k.status else ''});\n"
            f"}}\n")


def _edit(text: str, kernels: list[Kernel]) -> str:
    """text with the handlers added before the function that exports the
    capsules (the registrations dict's, or the module's), the ported
    kernels' entries (in code, not in comments) exporting the handlers, and
    the header included."""
    entries = {k.target: k for k in kernels}
    ported = [(m, span, entries[target]) for m, target, _fn, span in _entries(_code(text))
              if target in entries]
    first = min(m.start() for m, _span, _k in ported)
    exporters = [m for m in list(_DICT_FN.finditer(text)) + list(_MODULE_LINE.finditer(text))
                 if m.start() < first]
    at = max(m.start() for m in exporters) if exporters else text.rfind("\n", 0, first) + 1
    for _m, (start, end), k in sorted(ported, key=lambda e: -e[1][0]):
        text = text[:start] + _handler_name(k.function) + text[end:]
    block = []
    for k in kernels:
        if k.stream is not None:
            block.append(_gpu.handler(k.target, k.function, _handler_name(k.function), k.stream,
                                      k.status, k.counts))
            continue
        kind = "CpuStatus" if k.status else "Cpu"
        indent = " " * len("XLA_FFI_DEFINE_HANDLER(")
        # run time's counts on one line, as a binding of few calls reads
        bind = _binding.bind(k.counts, indent, one_line=k.counts is None)
        said = f" ({_binding.said(k.counts)})" if k.counts else ""
        block.append(_binding.comment(f"{k.target}, as a typed XLA FFI handler{said}.") +
                     _const_void(text, k) +
                     f"XLA_FFI_DEFINE_HANDLER({_handler_name(k.function)},\n"
                     f"{indent}{_binding.handler(kind, k.counts, _called(text, k))},\n"
                     f"{indent}{bind});\n")
    text = text[:at] + "\n".join(block) + "\n" + text[at:]
    includes = list(re.finditer(r'^#include\s*[<"][^>"]+[>"][^\n]*\n', text, re.M))
    inc = f'#include "{HEADER}"\n'
    pos = includes[-1].end() if includes else 0
    return text[:pos] + inc + text[pos:]


# The native exports it does not port yet, said where they are.
_NOT_YET = (
    (re.compile(r"\bXLA_(?:CPU_)?REGISTER_CUSTOM_CALL_TARGET\w*\s*\("),
     "a kernel registered with XLA's registration macro: not ported yet"),
)


def _not_yet(root: Path, files: list[Path], problems: list[Problem]) -> None:
    for path in files:
        if not path.name.endswith(SOURCES):
            continue
        text = path.read_text(errors="replace")
        for pattern, why in _NOT_YET:
            for m in pattern.finditer(text):
                problems.append(Problem(f"{path.relative_to(root)}:{_line(text, m.start())}",
                                        why))


def _module_of(text: str, sources: dict[Path, str]) -> str | None:
    """The Python module that exports a dict function defined in another
    source (pybammsolvers: IdakluJax.cpp's, exported by idaklu.cpp's
    `m.def("registrations", &Registrations)`)."""
    fn = _DICT_FN.search(text)
    name = re.search(r"(\w+)\s*\(", fn.group(0)).group(1) if fn else None
    if name is None:
        return None
    found = {m.group(1) for other in sources.values()
             for m in [_MODULE.search(other)] if m and
             re.search(r'"registrations"\s*,\s*&?\s*(?:\w+::)*' + re.escape(name) + r"\b",
                       other)}
    return found.pop() if len(found) == 1 else None


def _refused(kind: str, target: str, function: str, params: list[str], defined: str) -> str:
    """Why a CPU kernel of that kind is not ported."""
    why = {
        "cpu-status": "a kernel that reports through XlaCustomCallStatus, defined in another "
                      "file: not ported yet",
        "cpu-status-include": "a kernel that reports through XlaCustomCallStatus without "
                              "including xla/service/custom_call_status.h with quotes: not "
                              "ported yet",
        "cpu-v3": "an API version 3 kernel (opaque on CPU): not ported yet",
        "other": f"a signature it does not know ({', '.join(params)})",
        "cpu": f"its kernel is defined in another file ({defined}), whose declaration the file "
               "with the dict does not include: not ported (include its header there)",
    }[kind]
    return f"'{target}': {function} ({defined}) is {why}" if kind != "cpu" else \
        f"'{target}': {why}"


def scan(root: Path, files: list[Path], problems: list[Problem],
         held: set[tuple[str, str]] = frozenset(),
         fixed: dict[str, _binding.Counts] | None = None,
         registered: dict[str, set[str]] | None = None) -> list[Extension]:
    """Every registrations dict under root, its CPU and GPU kernels ported
    but those held (target, platform): their lowering stays legacy.  fixed:
    the (operands, results) of the targets whose call sites all fix them
    (_binding), bound so; registered: the platforms each module's Python
    registers it for (_hints), which a void*-stream kernel's platform is."""
    fixed = fixed or {}
    registered = registered or {}
    _not_yet(root, files, problems)
    sources = {p: p.read_text(errors="replace") for p in files if p.name.endswith(SOURCES)}
    found = []
    for path, text in sources.items():
        entries = _entries(_code(text))
        if not entries or not (_DICT_FN.search(text) or _MODULE_LINE.search(text)):
            continue
        module = _MODULE.search(text)
        ext = Extension(path, module.group(1) if module else _module_of(text, sources),
                        functions=not _DICT_FN.search(text))
        typed = set(_TYPED.findall(text))
        rel = path.relative_to(root)
        for m, target, function, _span in entries:
            where = f"{rel}:{_line(text, m.start())}"
            if base_name(function) in typed:
                ext.typed.append(target)
                ext.platforms[target] = _typed_platform(text, base_name(function),
                                                        registered.get(ext.module))
                continue
            kernel = _find_kernel(function, path, text, sources, root)
            if kernel is None:
                problems.append(Problem(where, f"'{target}': {function} has no source in the tree"))
                ext.legacy.append(target)
                continue
            params, defined = kernel
            kind = _kind(params)
            here = Path(defined.split(":")[0]) == rel
            ext.platforms[target] = _gpu.platform_of(params)
            untyped = _gpu.untyped_kind(params)
            if untyped:
                kind = untyped
                ext.platforms[target], why = _gpu.void_stream_platform(
                    f"'{target}': {function} ({defined})", ext.module, registered.get(ext.module))
                if why:
                    problems.append(Problem(where, why))
                    ext.legacy.append(target)
                    continue
            if (target, ext.platforms[target]) in held:
                problems.append(Problem(where, _gpu.held(target)))
                ext.legacy.append(target)
                continue
            if kind in ("gpu", "gpu-status") and ext.functions:
                # its registration would be typed by the capsule, but no call
                # site learns it is a GPU target (whose opaque it must pass)
                problems.append(Problem(where, f"'{target}': {function} ({defined}) is a GPU "
                                        "kernel exported by a module function (m.def): not "
                                        "ported yet"))
                ext.legacy.append(target)
                continue
            if kind in ("gpu", "gpu-status"):
                gpu = _gpu.scan_kernel(target, function, params, defined, path, text, sources,
                                       here)
                if isinstance(gpu, str):
                    problems.append(Problem(where, gpu))
                    ext.legacy.append(target)
                    continue
                kernel, status_header = gpu
                ext.ported.append(Kernel(target, function, params, defined, status=kernel.status,
                                         stream=kernel.stream, counts=fixed.get(target)))
                ext.status_header = status_header or ext.status_header
                continue
            if kind == "cpu" and (here or _gpu.declaring_include(path, text, function, sources)):
                # defined here, or declared in a header this file includes
                ext.ported.append(Kernel(target, function, params, defined,
                                         counts=fixed.get(target)))
                continue
            include = _STATUS_INCLUDE.search(text)
            if kind == "cpu-status" and here and include and include.group(1) == '"':
                ext.ported.append(Kernel(target, function, params, defined, status=True,
                                         counts=fixed.get(target)))
                ext.status_header = include.group(2)
                continue
            if kind == "cpu-status" and here:
                kind = "cpu-status-include"
            problems.append(Problem(where, _refused(kind, target, function, params, defined)))
            ext.legacy.append(target)
        if ext.ported:
            ext.text = _edit(text, ext.ported)
        found.append(ext)
    return found
