"""The native side of a port for Cython extensions that export legacy CPU
kernels as capsules (veros's form):

    cdef void kernel(void** out_ptr, void** data_ptr) nogil: ...
    cdef register_custom_call_target(unicode fn_name, void* fn):
        targets[fn_name] = PyCapsule_New(fn, "xla._CUSTOM_CALL_TARGET", NULL)
    register_custom_call_target("name", <void*>(kernel))

Beside the ``.pyx`` the port adds ``MODULE_ffi.cpp``, a C++ file that defines
one typed XLA FFI handler per kernel with XLA's ``ffi.h`` (through
``xla_legacy_call.h``, as for pybind11 extensions), and ``MODULE_ffi.h``,
their C declarations.  The kernel is made ``cdef public`` (C linkage, so the
handler calls it); the ``.pyx`` declares the handlers from the header and
exports their capsules instead of the kernels', under the same names.  The
extension's ``setup.py`` compiles the C++ file into the same extension and
gives it XLA's headers (``jax.ffi.include_dir()``).  CUDA/HIP kernels, in
the ``.pyx`` or declared ``cdef extern`` from a header beside it, get GPU
handlers in the same file (_gpu).  What it does not port (CPU kernels
declared ``cdef extern``, other signatures) is said with where and why.
The ``.pyx`` is read with Cython's own parser (_pyx).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import _pyx
from . import _gpu
from ._report import Problem

# Cython pointer-table parameters: void** / const void** / void*.
_CPU_PARAM = re.compile(r"^(const\s+)?void\s*\*\s*(\*\s*)?\w+$")


@dataclass
class CythonKernel:
    target: str
    function: str
    where: str


@dataclass
class CythonExtension:
    path: Path                      # the .pyx
    ported: list[CythonKernel] = field(default_factory=list)
    legacy: list[str] = field(default_factory=list)
    typed: list[str] = field(default_factory=list)    # targets already typed
    text: str | None = None         # the .pyx's new text
    handlers: str | None = None     # MODULE_ffi.cpp
    header: str | None = None       # MODULE_ffi.h
    platforms: dict[str, str] = field(default_factory=dict)  # target -> its kernel's platform
    streams: dict[str, str] = field(default_factory=dict)    # GPU kernel -> its stream type
    headers: dict[str, str] = field(default_factory=dict)    # extern kernel -> its header

    @property
    def stem(self) -> str:
        return self.path.name[:-len(".pyx")]

    @property
    def module(self) -> str:
        return self.stem


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _cpu(params: str) -> bool:
    parts = [p.strip() for p in params.split(",") if p.strip()]
    return len(parts) == 2 and all(_CPU_PARAM.match(p) for p in parts) and \
        "**" in re.sub(r"\s+", "", parts[1])


def _c_params(params: str) -> str:
    """The Cython parameters as C (the forms _cpu takes are already C)."""
    return ", ".join(re.sub(r"\s+", " ", p.strip()) for p in params.split(","))


def _guard(stem: str) -> str:
    return re.sub(r"\W", "_", stem).upper() + "_FFI_H_"


def _files(ext: CythonExtension, params: dict[str, str]) -> tuple[str, str]:
    """(MODULE_ffi.h, MODULE_ffi.cpp) for ext's ported kernels."""
    names = [k.function for k in ext.ported]
    guard = _guard(ext.stem)
    decls = "".join(f"XLA_FFI_Error* {n}_ffi(XLA_FFI_CallFrame* call_frame);\n" for n in names)
    header = (f"/* The typed XLA FFI handlers of {ext.path.name}'s kernels, defined in\n"
              f" * {ext.stem}_ffi.cpp; {ext.path.name} exports their capsules. */\n"
              f"#ifndef {guard}\n#define {guard}\n\n"
              '#include "xla/ffi/api/c_api.h"\n\n'
              "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n" + decls +
              "\n#ifdef __cplusplus\n}\n#endif\n\n"
              f"#endif /* {guard} */\n")
    blocks = []
    for k in ext.ported:
        n = k.function
        if n in ext.streams:
            blocks.append(_gpu.cython_handler(k.target, n, k.where, ext.streams[n]))
            continue
        out, inp = (p.strip() for p in params[n].split(","))
        out_t = re.sub(r"\s*\w+$", "", out)
        in_t = re.sub(r"\s*\w+$", "", inp)
        what = n if k.target == n else f"'{k.target}': {n}"
        blocks.append(
            f"// {what} ({k.where}), as a typed XLA FFI handler.\n"
            f"static void {n}_call(void* out, const void** in) {{\n"
            f"  {n}(({out_t})out, ({in_t})in);\n"
            f"}}\n"
            f"XLA_FFI_DEFINE_HANDLER_SYMBOL({n}_ffi,\n"
            f"                              xla_legacy_call::CpuHandler<{n}_call>,\n"
            f"                              xla::ffi::Ffi::Bind().RemainingArgs()"
            f".RemainingRets());\n")
    kernels = "".join(f"void {n}({_c_params(params[n])});\n" for n in names
                      if n not in ext.headers)
    declared = ""
    if kernels:
        declared += (f"// The kernels, `cdef public` in {ext.path.name}.\n"
                     f'extern "C" {{\n{kernels}}}\n\n')
    for included in sorted(set(ext.headers.values())):
        declared += f'#include "{included}"  // the kernels {ext.path.name} declares from it\n\n'

    which = "GPU" if ext.streams else "CPU"
    source = (f"// Typed XLA FFI handlers (API version 4) for the legacy {which} kernels of\n"
              f"// {ext.path.name}: each calls its kernel unchanged, with "
              + ("what\n" if ext.streams else "the pointer tables\n") +
              f"// XLA's legacy runtime passed it (xla_legacy_call.h).  Compiled into the same\n"
              f"// extension; XLA's headers come from jax.ffi.include_dir().\n"
              f'#include "{ext.stem}_ffi.h"\n\n' + _gpu.runtime_includes(ext.streams.values()) +
              '#include "xla_legacy_call.h"\n\n' + declared + "\n".join(blocks))
    return header, source


def _edit(pyx: _pyx.Pyx, ext: CythonExtension) -> str:
    """The .pyx's text with its ported kernels made `cdef public`, the
    handlers declared and exported in their place."""
    ported = {k.function for k in ext.ported}
    edits = [(f.start, f.head, "cdef public void")
             for f in (pyx.functions.get(n) for n in ported) if f is not None and f.void]
    exports = [e for e in pyx.exports if e.kernel in ported]
    edits += [(e.kernel_at + len(e.kernel),) * 2 + ("_ffi",) for e in exports]
    # The declarations go before the function that makes the capsules, or
    # before the first export.
    text, first = pyx.text, exports[0]
    helper = pyx.functions.get(first.helper)
    line = text.rfind("\n", 0, first.kernel_at) + 1
    at = helper.start if helper is not None and helper.start < line else line
    decls = "".join(f"    XLA_FFI_Error* {k.function}_ffi(XLA_FFI_CallFrame* call_frame) nogil\n"
                    for k in ext.ported)
    edits.append((at, at, f"# The kernels as typed XLA FFI handlers ({ext.stem}_ffi.cpp).\n"
                  f'cdef extern from "{ext.stem}_ffi.h":\n'
                  "    ctypedef struct XLA_FFI_Error\n"
                  "    ctypedef struct XLA_FFI_CallFrame\n" + decls + "\n\n"))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _extern_kernel(ext: CythonExtension, target: str, fn: str, pyx: _pyx.Pyx,
                   held: set[tuple[str, str]], params: dict[str, str]) -> str | None:
    """A kernel the .pyx declares `cdef extern from "header"` (veros's CUDA
    kernels, in a .cu): ported (None) where it is a CUDA/HIP kernel and its
    header is beside the .pyx, for the handlers' file to include; '' where
    it is a typed handler already; else why it is not ported."""
    declared = pyx.declared.get(fn)
    if declared is None:
        return f"'{target}': {fn} has no definition in {ext.path.name}"
    decl, header = declared.params, declared.header
    if "XLA_FFI_CallFrame" in decl:
        ext.typed.append(target)
        return ""
    parts = [p.strip() for p in decl.split(",") if p.strip()]
    ext.platforms[target] = _gpu.platform_of(parts)
    if (target, ext.platforms[target]) in held:
        return _gpu.held(target)
    if _gpu.kind(parts) != "gpu":
        return (f"'{target}': {fn} is declared cdef extern (its source is not this .pyx): "
                "not ported yet")
    if not (ext.path.parent / header).is_file():
        return (f"'{target}': {fn} is a GPU kernel declared from {header}, which is not "
                f"beside {ext.path.name}: not ported")
    params[fn] = decl
    ext.streams[fn] = _gpu.stream_of(parts)
    ext.headers[fn] = header
    ext.ported.append(CythonKernel(target, fn, header))
    return None


def scan(root: Path, files: list[Path], problems: list[Problem],
         held: set[tuple[str, str]] = frozenset()) -> list[CythonExtension]:
    """Every .pyx under root that exports legacy kernels as capsules, its CPU
    and CUDA/HIP kernels ported but those held (target, platform)."""
    found = []
    for path in files:
        if not path.name.endswith(".pyx"):
            continue
        text = path.read_text(errors="replace")
        if "xla._CUSTOM_CALL_TARGET" not in text:
            continue
        rel = path.relative_to(root)
        ext = CythonExtension(path)
        params: dict[str, str] = {}
        tag = f"{rel}:{_line(text, text.find('xla._CUSTOM_CALL_TARGET'))}"
        try:
            pyx = _pyx.Pyx(ext.stem, text)
        except _pyx.Unreadable as e:
            problems.append(Problem(tag, f"not read: {e}"))
            continue
        if not pyx.exports:
            problems.append(Problem(tag, "a Cython capsule export other than register(\"name\", "
                                    "<void*>(kernel)) through a helper: not ported yet"))
            continue
        for export in pyx.exports:
            target, fn = export.target, export.kernel
            where = f"{rel}:{export.line}"
            d = pyx.functions.get(fn)
            if d is None or not d.void:
                why = _extern_kernel(ext, target, fn, pyx, held, params)
                if why:
                    problems.append(Problem(where, why))
                    ext.legacy.append(target)
                continue
            parts = [p.strip() for p in d.params.split(",") if p.strip()]
            ext.platforms[target] = "cpu" if _cpu(d.params) else _gpu.cython_platform(parts)
            if (target, ext.platforms[target]) in held:
                problems.append(Problem(where, _gpu.held(target)))
                ext.legacy.append(target)
                continue
            if _gpu.kind(parts) == "gpu":
                params[fn] = d.params
                ext.streams[fn] = _gpu.stream_of(parts)
                ext.ported.append(CythonKernel(target, fn, f"{rel.name}:{d.line}"))
                continue
            if ext.platforms[target] == "other":
                problems.append(Problem(where, f"'{target}': {fn} ({rel}:{d.line}) "
                                        "is a GPU kernel whose stream is neither CUDA's nor "
                                        f"HIP's ({parts[0]}): not ported yet"))
                ext.legacy.append(target)
                continue
            if not _cpu(d.params):
                problems.append(Problem(where, f"'{target}': {fn} ({rel}:{d.line}) is a "
                                        f"signature it does not know ({d.params.strip()})"))
                ext.legacy.append(target)
                continue
            params[fn] = d.params
            ext.ported.append(CythonKernel(target, fn, f"{rel.name}:{d.line}"))
        if ext.ported:
            ext.header, ext.handlers = _files(ext, params)
            ext.text = _edit(pyx, ext)
        found.append(ext)
    return found
