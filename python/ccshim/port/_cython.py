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
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from . import _gpu
from ._report import Problem

# register("name", <void*>(kernel))  -- any one helper called with a literal
# name and a kernel cast to void*.
_EXPORT = re.compile(r"""(\w+)\(\s*(['"])([^'"]+)\2\s*,\s*<void\s*\*>\s*\(?\s*(\w+)\s*\)?\s*\)""")
_CDEF = r"^([ \t]*)cdef\s+(public\s+|api\s+)?void\s+{name}\s*\(([^)]*)\)"
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


def _extern(text: str, name: str) -> tuple[str, str] | None:
    """(the parameters of name, the header it is declared from) when a
    `cdef extern from "header"` block declares it."""
    for block in re.finditer(r"^cdef\s+extern\s+from\s+['\"]([^'\"]*)['\"][^\n]*:\n"
                             r"((?:[ \t]+[^\n]*\n|\n)*)", text, re.M):
        m = re.search(r"\b" + re.escape(name) + r"\s*\(([^)]*)\)", block.group(2))
        if m:
            return m.group(1), block.group(1)
    return None


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


def _edit(text: str, ext: CythonExtension) -> str:
    ported = {k.function for k in ext.ported}
    for name in ported:
        text = re.sub(_CDEF.format(name=re.escape(name)),
                      lambda m: f"{m.group(1)}cdef public void {name}({m.group(3)})", text,
                      count=1, flags=re.M)

    def export(m: re.Match) -> str:
        if m.group(4) not in ported:
            return m.group(0)
        s, e = m.span(4)
        return m.group(0)[:s - m.start()] + m.group(4) + "_ffi" + m.group(0)[e - m.start():]

    first = min(m.start() for m in _EXPORT.finditer(text) if m.group(4) in ported)
    # The declarations go before the function that makes the capsules, or
    # before the first export.
    helper = next(m.group(1) for m in _EXPORT.finditer(text) if m.group(4) in ported)
    defn = re.search(r"^cdef\s+[\w ]*?\b" + re.escape(helper) + r"\s*\(", text, re.M)
    at = defn.start() if defn and defn.start() < first else text.rfind("\n", 0, first) + 1
    decls = "".join(f"    XLA_FFI_Error* {k.function}_ffi(XLA_FFI_CallFrame* call_frame) nogil\n"
                    for k in ext.ported)
    block = (f"# The kernels as typed XLA FFI handlers ({ext.stem}_ffi.cpp).\n"
             f'cdef extern from "{ext.stem}_ffi.h":\n'
             "    ctypedef struct XLA_FFI_Error\n"
             "    ctypedef struct XLA_FFI_CallFrame\n" + decls + "\n\n")
    text = text[:at] + block + text[at:]
    return _EXPORT.sub(export, text)


def _extern_kernel(ext: CythonExtension, target: str, fn: str, text: str,
                   held: set[tuple[str, str]], params: dict[str, str]) -> str | None:
    """A kernel the .pyx declares `cdef extern from "header"` (veros's CUDA
    kernels, in a .cu): ported (None) where it is a CUDA/HIP kernel and its
    header is beside the .pyx, for the handlers' file to include; '' where
    it is a typed handler already; else why it is not ported."""
    declared = _extern(text, fn)
    if declared is None:
        return f"'{target}': {fn} has no definition in {ext.path.name}"
    decl, header = declared
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
        exports = list(_EXPORT.finditer(text))
        if not exports:
            m = re.search(r"xla\._CUSTOM_CALL_TARGET", text)
            problems.append(Problem(f"{rel}:{_line(text, m.start())}", "a Cython capsule "
                                    "export other than register(\"name\", <void*>(kernel)) "
                                    "through a helper: not ported yet"))
            continue
        for m in exports:
            target, fn = m.group(3), m.group(4)
            where = f"{rel}:{_line(text, m.start())}"
            d = re.search(_CDEF.format(name=re.escape(fn)), text, re.M)
            if d is None:
                why = _extern_kernel(ext, target, fn, text, held, params)
                if why:
                    problems.append(Problem(where, why))
                    ext.legacy.append(target)
                continue
            parts = [p.strip() for p in d.group(3).split(",") if p.strip()]
            ext.platforms[target] = "cpu" if _cpu(d.group(3)) else _gpu.cython_platform(parts)
            if (target, ext.platforms[target]) in held:
                problems.append(Problem(where, _gpu.held(target)))
                ext.legacy.append(target)
                continue
            if _gpu.kind(parts) == "gpu":
                params[fn] = d.group(3)
                ext.streams[fn] = _gpu.stream_of(parts)
                ext.ported.append(CythonKernel(target, fn, f"{rel.name}:{_line(text, d.start())}"))
                continue
            if ext.platforms[target] == "other":
                problems.append(Problem(where, f"'{target}': {fn} ({rel}:{_line(text, d.start())}) "
                                        "is a GPU kernel whose stream is neither CUDA's nor "
                                        f"HIP's ({parts[0]}): not ported yet"))
                ext.legacy.append(target)
                continue
            if not _cpu(d.group(3)):
                problems.append(Problem(where, f"'{target}': {fn} ({rel}:"
                                        f"{_line(text, d.start())}) is a signature it does not "
                                        f"know ({d.group(3).strip()})"))
                ext.legacy.append(target)
                continue
            params[fn] = d.group(3)
            ext.ported.append(CythonKernel(target, fn, f"{rel.name}:{_line(text, d.start())}"))
        if ext.ported:
            ext.header, ext.handlers = _files(ext, params)
            ext.text = _edit(text, ext)
        found.append(ext)
    return found
