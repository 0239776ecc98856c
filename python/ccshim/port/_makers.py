"""The native side of a port, for capsules made by hand: a C++ function that
returns ``PyCapsule_New(fn, "xla._CUSTOM_CALL_TARGET", NULL)`` of a kernel,
stored in a member that the Python binding exposes (tfc's form:
``xlaCapsule = GetXlaCapsule();``, read in Python as ``obj.xlaCapsule``).

Beside such a function the port adds the kernel's typed handler, and the
capsule is made of the handler instead: the kernel's name becomes the
handler's, and a local that held the kernel's pointer (``xlaFnType p =
xlaWrapper;``) becomes an ``XLA_FFI_Handler*``.  What the Python side needs
is which attribute holds which kind of capsule (``Extension.capsules``).
"""

from __future__ import annotations

import re
from pathlib import Path

from ._native import HEADER, SOURCES, Extension, Kernel, _find_kernel, _handler_name, \
    _kind, _line
from ._report import Problem

_TAG = '"xla._CUSTOM_CALL_TARGET"'
# PyCapsule_New(reinterpret_cast<void *>(p), name, ...) / ((void*)p, ...) / (p, ...)
_NEW = re.compile(r"PyCapsule_New\s*\(\s*(?:reinterpret_cast\s*<\s*void\s*\*\s*>\s*\(\s*(\w+)\s*\)"
                  r"|\(\s*void\s*\*\s*\)\s*(\w+)|(\w+))\s*,\s*([^,()]+?)\s*,")
# A function definition's first line, at the start of a line: its name.
_DEF = re.compile(r"^[A-Za-z_][\w:<>\*&\s]*?\b((?:\w+::)?(\w+))\s*\([^;{)]*\)\s*(?:const\s*)?\{",
                  re.M)


def _maker(text: str, new: re.Match) -> tuple[re.Match, str, str, re.Match | None] | None:
    """(its definition, the pointer's name, the kernel's, the local holding
    it) of the function that makes the capsule new; None when the capsule is
    not XLA's or its pointer is not a kernel's name or a local's."""
    defs = [d for d in _DEF.finditer(text) if d.end() <= new.start()]
    if not defs:
        return None
    head = defs[-1]
    body = text[head.end():new.start()]
    tag = new.group(4)
    if tag != _TAG and not re.search(r"\b" + re.escape(tag) + r"\s*=\s*" + re.escape(_TAG), body):
        return None
    pointer = new.group(1) or new.group(2) or new.group(3)
    local = list(re.finditer(r"^[ \t]*[\w:<>]+[ \t\*&]+" + re.escape(pointer) +
                             r"[ \t]*=[ \t]*&?[ \t]*(\w+)[ \t]*;[ \t]*$", body, re.M))
    kernel = local[-1].group(1) if local else pointer
    return head, pointer, kernel, local[-1] if local else None


def _members(sources: dict[Path, str], function: str) -> list[str]:
    """The members assigned what function returns (`xlaCapsule = F();`)."""
    found = []
    for text in sources.values():
        found += re.findall(r"\b(\w+)\s*=\s*(?:this\s*->\s*)?" + re.escape(function) +
                            r"\s*\(\s*\)\s*;", text)
    return sorted(set(found))


def scan(root: Path, files: list[Path], problems: list[Problem]) -> list[Extension]:
    """Every source under root that makes XLA capsules by hand, its CPU
    kernels' capsules made of typed handlers."""
    sources = {p: p.read_text(errors="replace") for p in files if p.name.endswith(SOURCES)}
    found = []
    for path, text in sources.items():
        if _TAG not in text or "PyCapsule_New" not in text:
            continue
        rel = path.relative_to(root)
        ext = Extension(path, None, functions=True)
        edits = []      # (definition's start, pointer's local or None, kernel)
        for new in _NEW.finditer(text):
            made = _maker(text, new)
            if made is None:
                continue
            head, _pointer, kernel, local = made
            where = f"{rel}:{_line(text, new.start())}"
            members = _members(sources, head.group(2))
            params = _find_kernel(kernel, path, text, sources, root)
            kind = _kind(params[0]) if params else None
            if kind == "cpu" and Path(params[1].split(":")[0]) == rel:
                ext.ported.append(Kernel(head.group(2), kernel, params[0], params[1]))
                ext.capsules.update({m: True for m in members})
                edits.append((head, local, kernel, new))
                continue
            why = ("has no source in the tree" if params is None else
                   "is a GPU kernel (CUDA/HIP stream first): typed GPU handlers are not "
                   "generated yet" if kind == "gpu" else
                   f"is defined in another file ({params[1]}): not ported yet"
                   if kind == "cpu" else f"is a signature it does not know ({', '.join(params[0])})")
            problems.append(Problem(where, f"the capsule {head.group(1)} makes of {kernel}: "
                                    f"{kernel} {why}"))
            ext.capsules.update({m: False for m in members})
        if edits:
            ext.text = _edit(text, edits)
        if ext.capsules:
            found.append(ext)
    return found


def _edit(text: str, edits) -> str:
    """text with each maker's kernel made its handler, the handler defined
    before the maker, and the header included."""
    for head, local, kernel, new in sorted(edits, key=lambda e: -e[0].start()):
        handler = _handler_name(kernel)
        if local is not None:
            start = head.end() + local.start()
            indent = re.match(r"[ \t]*", local.group(0)).group(0)
            pointer = re.search(r"\b(\w+)\s*=", local.group(0)).group(1)
            text = (text[:start] + f"{indent}XLA_FFI_Handler* {pointer} = {handler};" +
                    text[head.end() + local.end():])
        else:
            span = new.span(1) if new.group(1) else new.span(2) if new.group(2) else new.span(3)
            text = text[:span[0]] + handler + text[span[1]:]
        text = (text[:head.start()] +
                f"// {kernel}, as a typed XLA FFI handler.\n"
                f"XLA_FFI_DEFINE_HANDLER({handler},\n"
                f"                       xla_legacy_call::CpuHandler<{kernel}>,\n"
                f"                       xla::ffi::Ffi::Bind().RemainingArgs().RemainingRets());\n"
                f"\n" + text[head.start():])
    includes = list(re.finditer(r'^#include\s*[<"][^>"]+[>"][^\n]*\n', text, re.M))
    pos = includes[-1].end() if includes else 0
    return text[:pos] + f'#include "{HEADER}"\n' + text[pos:]
