"""The Python side of `ccshim scan`: reads a tree's .py files with libcst
and its Cython files (.pyx, .pxd, .pxi) with Cython's own parser, the
readers `ccshim port` edits them with, and writes what it found as records
the command reads (docs/contracts.md, section 4).

    python -m ccshim.scan --paths-file FILE      (FILE: PATH NUL SHOWN NUL ...)
    python -m ccshim.scan FILE.py|FILE.pyx...    (each shown as given)

Only a file that names a registration or a custom call is parsed (a Cython
file also where it makes a capsule or defines a void function; and, once
every file is read, one that names a function of the project's own that
registers); the others are counted as read.
"""

from __future__ import annotations

import ast
import re
import sys
import threading

# What a file must contain for any of its calls to be a finding.
_WORDS = (b"custom_call", b"CustomCall", b"register_ffi_target", b"ffi_call")
# Cython, read with Cython's parser (_cython); what else makes one worth
# parsing: a capsule made, a registration, a function returning void.
_CYTHON = (".pyx", ".pxd", ".pxi")
_CYTHON_WORDS = (b"PyCapsule_New", b"register_", b"void")


def _too_deep(data: bytes) -> str | None:
    """Why CPython's own parser refuses the file for its nesting, or None.
    libcst's parser has no such bound (a file of 170000 nested calls
    overflows its stack), so a file CPython finds nested too deeply is not
    given to it; any other error of CPython's (a newer Python's syntax than
    this one's) is libcst's to judge."""
    try:
        ast.parse(data)
    except (RecursionError, MemoryError) as e:
        return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    except SyntaxError as e:
        if "too many nested" in str(e) or "too deeply nested" in str(e):
            return f"line {e.lineno}: {e.msg}"
    except ValueError:
        pass
    return None


def _parse(data: bytes):
    """(module, None), or (None, why it did not parse)."""
    import libcst as cst
    deep = _too_deep(data)
    if deep is not None:
        return None, f"nested too deeply for a Python parser ({deep}); not scanned"
    try:
        return cst.parse_module(data), None
    except cst.ParserSyntaxError as e:
        said = re.sub(r"^parser error: error at \d+:\d+: ", "", e.message)
        return None, (f"not parsed as Python by libcst (line {e.editor_line}, column "
                      f"{e.editor_column}: {said}); not scanned")
    except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError) as e:
        return None, f"not parsed as Python by libcst ({type(e).__name__}: {e}); not scanned"


def _read(path: str) -> tuple[bytes | None, str | None]:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return None, f"cannot read: {e.strerror or e}"
    nul = data.find(b"\0")
    if nul >= 0:
        return None, (f"a binary file (NUL byte at offset {nul}), not Python/Cython source; "
                      "not scanned")
    return data, None


def _read_cython(shown: str, data: bytes) -> tuple[list, str | None]:
    """A Cython file's findings (_cython), where it names a registration, a
    custom call, a capsule or a void function; and why it was not read, or
    None."""
    from .. import _pyx
    from . import _cython
    if not any(w in data for w in _WORDS + _CYTHON_WORDS):
        return [], None
    try:
        return _cython.read(shown, data.decode("utf-8", errors="replace")), None
    except _pyx.Unreadable as e:
        return [], f"not read: {e}; not scanned"
    except RecursionError:
        return [], "nested too deeply for Cython's parser; not scanned"


def records(pairs: list[tuple[str, str]]) -> list[tuple]:
    """The records for the files (path, shown), in the contract's order:
    each file's P or E, each file's findings (R), then the late ones (W)."""
    from ._reader import FIELDS, Scan, Source

    scan = Scan()
    texts: dict[int, bytes] = {}
    errors: dict[int, str] = {}
    cython: dict[int, list] = {}    # a Cython file's findings (its calls of the
                                    # project's functions are not followed)
    for index, (path, shown) in enumerate(pairs):
        data, why = _read(path)
        if why is None and path.endswith(_CYTHON):
            cython[index], why = _read_cython(shown, data)
        elif why is None and any(w in data for w in _WORDS):
            module, why = _parse(data)
            if module is not None:
                scan.read(index, shown, module)
        if why is not None:
            errors[index] = why
        else:
            texts[index] = data
    # The files that call a registering function of the project's own.
    also: dict[int, Source] = {}
    wrapped = [fn.encode() for fn in scan.wrapped()]
    for index, data in texts.items():
        if index not in scan.sources and index not in cython and \
                any(fn in data for fn in wrapped):
            module, why = _parse(data)
            if module is None:
                errors[index] = why
            else:
                also[index] = Source(pairs[index][1], module)
    scan.wrapper_calls(sorted(set(texts) - set(cython)), also)
    out: list[tuple] = []
    for index in range(len(pairs)):
        if index in errors:
            out.append(("E", index, errors[index]))
        else:
            out.append(("P", index, texts[index].count(b"\n") + 1))
    found = {**scan.found, **cython}
    for index in sorted(found):
        if index not in errors:
            out += [("R", index, *(getattr(f, k) for k in FIELDS)) for f in found[index]]
    out += [("W", index, *(getattr(f, k) for k in FIELDS)) for index, f in scan.late
            if index not in errors]
    return out


def read_all(pairs: list[tuple[str, str]]) -> list[tuple]:
    """records(pairs), run where libcst's visitors, which recurse once or
    more per level of a nested expression, have room for the deepest one
    CPython accepts (200 brackets): a thread of a large stack."""
    out: list[list[tuple]] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            out.append(records(pairs))
        except BaseException as e:  # raised again in the caller's thread
            failed.append(e)

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 50000))
    before = threading.stack_size(512 << 20)
    try:
        reader = threading.Thread(target=run)
        reader.start()
    finally:
        threading.stack_size(before)
    reader.join()
    if failed:
        raise failed[0]
    return out[0]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--paths-file"] and len(argv) == 2:
        with open(argv[1], "rb") as f:
            parts = f.read().split(b"\0")
        names = [p.decode("utf-8", "surrogateescape") for p in parts[:-1]]
        pairs = list(zip(names[0::2], names[1::2]))
    elif argv and not any(a.startswith("-") for a in argv):
        pairs = [(a, a) for a in argv]
    else:
        print("usage: python -m ccshim.scan --paths-file FILE | FILE.py...", file=sys.stderr)
        return 2
    try:
        import libcst  # noqa: F401
    except ImportError as e:
        print(f"ccshim scan: reading Python files needs libcst in {sys.executable} ({e}): "
              "pip install libcst, or set CCSHIM_PYTHON to a Python that has it",
              file=sys.stderr)
        return 2
    for record in read_all(pairs):
        sys.stdout.write("\t".join(str(x).replace("\t", " ").replace("\n", " ")
                                   .replace("\r", " ") for x in record) + "\n")
    return 0
