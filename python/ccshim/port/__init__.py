"""``ccshim port TREE... [--apply]``: a project's legacy custom-call targets
made typed-FFI targets, as a patch that ``git apply`` takes.

Today it ports the most-copied legacy form (dfm/extending-jax's): C++ CPU
kernels ``void f(void* out, const void** in)`` exported by a pybind11
``registrations()`` dict of capsules, registered with
``xla_client.register_custom_call_target`` and lowered with
``mlir.custom_call`` / ``hlo_helpers.custom_call``.  Beside each kernel it
adds a typed handler (XLA's ``ffi.h``) that calls it unchanged; the dict
exports the handler; the build finds XLA's FFI headers with
``jax.ffi.include_dir()``; the registration becomes
``jax.ffi.register_ffi_target`` and the lowering ``jax.ffi.ffi_lowering``
with the same operands, results and layouts.  What it cannot port is said
on stderr, with where and why, and the rest is still ported.  Cython
capsules (veros's, mpi4jax's form) are ported too: a C++ file of typed
handlers beside the ``.pyx``, compiled into the same extension by its
``setup.py`` (``_cython``).  XlaBuilder translation rules become lowering
rules (``_translation``), and a ``setup.py`` pybind11 build gets the headers
(``_setup``).  CUDA/HIP kernels of both forms get handlers bound to the
platform stream, their lowering passing the legacy opaque bytes as an
attribute (``_gpu``, ``_gpu_lowering``).  Capsules returned by module
functions or made by hand (``_makers``) are ported too, and target names are
followed to their registrations (``_names``, ``_registering``), through a
project's own wrapper of custom_call (``_wrapper``).  docs/port.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import _binding, _build, _cython, _makers, _native
from ._report import Problem, unified

__all__ = ["main", "port"]

_SKIP_DIRS = {".git", ".hg", ".svn", "build", "dist", "__pycache__", ".nox", ".tox", ".venv",
              "node_modules"}


def _files(root: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and
                             not d.endswith(".egg-info"))
        found += [Path(dirpath) / f for f in sorted(filenames)]
    return found


def port(trees: list[Path]) -> tuple[dict[Path, tuple[str | None, str]], list[Problem]]:
    """The edits that port trees: {path: (old text or None, new text)}, and
    what it could not port.  A target whose lowering stays legacy (it shares
    a call site with targets not ported) is held: the port is made again
    with it left legacy everywhere (_gpu_lowering)."""
    held: set[tuple[str, str]] = set()
    fixed: dict[str, _binding.Counts] = {}
    while True:
        edits, problems, more, counts = _port(trees, held, fixed)
        now = _binding.fixed(counts)
        if more <= held and now == fixed:
            return edits, problems
        held |= more
        fixed = now


def _port(trees: list[Path], held: set[tuple[str, str]], fixed: dict[str, _binding.Counts]):
    """One pass: its edits and problems, the targets to hold, and each
    target's lowerings' counts (_binding); fixed: the counts the handlers are
    bound for, from the pass before."""
    from . import _python   # libcst: only where a port runs
    from ._facts import bound_elsewhere

    problems: list[Problem] = []
    edits: dict[Path, tuple[str | None, str]] = {}
    roots = [t.resolve() for t in trees]
    base = Path(os.path.commonpath(roots)) if len(roots) > 1 else roots[0]
    exts = []
    listed = {root: _files(root) for root in roots}     # each tree walked once
    from ._hints import registered_platforms
    registered = registered_platforms([p for files in listed.values() for p in files])
    for root in roots:
        files = listed[root]
        found = _native.scan(root, files, problems, held, fixed, registered) + \
            _makers.scan(root, files, problems)
        exts += found
        done = [e for e in found if e.text is not None]
        for e in done:
            edits[e.path] = (e.path.read_text(), e.text)
            header = e.path.parent / _native.HEADER
            edits[header] = (None, (Path(__file__).parent / "legacy_call.h").read_text())
            if e.status_header:
                status = e.path.parent / e.status_header
                if not status.exists():
                    edits[status] = (None, (Path(__file__).parent /
                                            "custom_call_status.h").read_text())
        if done:
            for path, text in _build.port(root, [e.path for e in done], problems).items():
                edits[path] = (path.read_text(), text)
        cython = _cython.scan(root, files, problems, held)
        done_cy = [e for e in cython if e.text is not None]
        for e in done_cy:
            edits[e.path] = (e.path.read_text(), e.text)
            folder = e.path.parent
            edits[folder / f"{e.stem}_ffi.h"] = (None, e.header)
            edits[folder / f"{e.stem}_ffi.cpp"] = (None, e.handlers)
            edits[folder / _native.HEADER] = (None, (Path(__file__).parent /
                                                     "legacy_call.h").read_text())
        if done_cy:
            from ._cython_setup import setup_py   # libcst: only where a port runs
            setup = setup_py(root, done_cy, problems)
            if setup is not None:
                edits[root / "setup.py"] = ((root / "setup.py").read_text(), setup)
            for path, text in _build.port_pyproject(root).items():
                edits[path] = (path.read_text(), text)
        exts += cython
    named = [e for e in exts if not getattr(e, "functions", False)]
    ported = {k.target for e in named for k in e.ported} | {t for e in named for t in e.typed}
    legacy = {t for e in named for t in e.legacy}
    modules = {e.module: ({k.target for k in e.ported} | set(e.typed), set(e.legacy))
               for e in exts if getattr(e, "module", None)}
    capsules = {k: v for e in exts for k, v in getattr(e, "capsules", {}).items()}
    kernels: dict[str, dict[str, bool]] = {}     # target -> {platform: ported}
    for e in named:
        for target, platform in e.platforms.items():
            kernels.setdefault(target, {})[platform] = target not in e.legacy
    more: set[tuple[str, str]] = set()
    counts: dict[str, set[_binding.Counts | None]] = {}
    tree = _modules(listed)
    dotted = {path: name for name, path in tree.items()}
    elsewhere = bound_elsewhere(tree)
    for root in roots:
        for path in listed[root]:
            if path.suffix != ".py":
                continue
            text = path.read_text(errors="replace")
            try:
                new = _python.port(str(path.relative_to(base)), text, ported, legacy, modules,
                                   problems, kernels, more, held, capsules, tree,
                                   dotted.get(path, ""), counts,
                                   elsewhere.get(dotted.get(path), {}))
            except RecursionError:
                # nested deeper than Python's reader goes: said, and the module's
                # targets left as they are (any lowering of them may be in it)
                problems.append(Problem(str(path.relative_to(base)), "nested too deeply to "
                                        "read (Python's recursion limit): not ported, and "
                                        "every target it may lower kept legacy"))
                counts.setdefault(_binding.ANY, set()).add(None)
                more |= {(t, p) for t, ps in kernels.items() for p, ok in ps.items() if ok}
                continue
            if new is not None and new != text:
                edits[path] = (text, new)
    edits = {p: _line_ends(p, old, new) for p, (old, new) in edits.items()}
    # Problems are said relative to the patch's base.
    problems = [Problem(_rebase(p.where, roots, base), p.why) for p in problems]
    return {p: edits[p] for p in sorted(edits)}, problems, more, counts


def _modules(listed: dict[Path, list[Path]]) -> dict[str, Path]:
    """The trees' Python modules (listed: each root's files) by the dotted
    names they are imported as (a package's __init__.py by the package's;
    under src/, without it)."""
    found: dict[str, Path] = {}
    for root, files in listed.items():
        for path in files:
            if path.suffix != ".py":
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if parts and parts[0] == "src":
                parts.pop(0)
            if parts:
                found.setdefault(".".join(parts), path)
    return found


def _line_ends(path: Path, old: str | None, new: str) -> tuple[str | None, str]:
    """An edit of a file whose lines end in CRLF (tfc's sources), as that
    file is: everything above reads text with its line ends made \\n."""
    if old is None:
        return old, new
    raw = path.read_bytes().decode(errors="replace")
    if "\r\n" not in raw or raw.count("\r\n") != raw.count("\n"):
        return old, new
    return raw, new.replace("\r\n", "\n").replace("\n", "\r\n")


def _rebase(where: str, roots: list[Path], base: Path) -> str:
    if len(roots) == 1:
        return where
    for root in roots:
        if (root / where.rsplit(":", 1)[0]).exists():
            return str((root / where).relative_to(base))
    return where


def patch(edits: dict[Path, tuple[str | None, str]], base: Path) -> str:
    return "".join(unified(str(p.relative_to(base)), old, new) for p, (old, new) in edits.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="ccshim port",
        description="Print a patch (git apply takes it) that ports a project's legacy "
                    "custom-call targets to typed XLA FFI handlers; what it cannot port is "
                    "said on stderr.")
    parser.add_argument("trees", nargs="+", type=Path, metavar="TREE",
                        help="the project's source tree (several: where its kernels live in "
                             "another package); the patch's paths are relative to their "
                             "common folder")
    parser.add_argument("--apply", action="store_true", help="write the edits in place")
    args = parser.parse_args(argv)
    for tree in args.trees:
        if not tree.is_dir():
            parser.error(f"{tree}: expected a project's source folder, got no folder")
    try:
        import libcst  # noqa: F401
    except ImportError:
        print("ccshim port: needs libcst (pip install libcst, or ccshim[port])", file=sys.stderr)
        return 2
    roots = [t.resolve() for t in args.trees]
    base = Path(os.path.commonpath(roots)) if len(roots) > 1 else roots[0]
    edits, problems = port(args.trees)
    for p in problems:
        print(f"ccshim port: {p}", file=sys.stderr)
    if args.apply:
        for path, (_old, new) in edits.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(new, newline="")
        print(f"ccshim port: {len(edits)} files written", file=sys.stderr)
    else:
        sys.stdout.write(patch(edits, base))
    return 0
