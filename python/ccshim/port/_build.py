"""The build side of a port: the targets that compile ported sources find
XLA's FFI headers through ``jax.ffi.include_dir()``, as JAX's own FFI example
(examples/ffi) does, and compile as C++17 (what the headers need)."""

from __future__ import annotations

import re
from pathlib import Path

from ._report import Problem

_XLA_DIR = """\
# XLA's FFI headers, as jaxlib ships them, for the typed handlers of the
# JAX ops (the way JAX's examples/ffi finds them).
execute_process(
    COMMAND "${{{python}}}" "-c" "from jax import ffi; print(ffi.include_dir())"
    OUTPUT_STRIP_TRAILING_WHITESPACE OUTPUT_VARIABLE XLA_DIR)
message(STATUS "XLA include directory: ${{XLA_DIR}}")
"""


def _cmake(text: str, rel_sources: list[str], where: str,
           problems: list[Problem]) -> str | None:
    """CMakeLists text with the targets building rel_sources given XLA's
    headers and C++17; None (and a problem) when no target builds them."""
    targets = []
    for src in rel_sources:
        m = re.search(r"(?:pybind11_add_module|nanobind_add_module|add_library)\s*\(\s*(\w+)"
                      r"[^)]*" + re.escape(src), text)
        if not m:
            problems.append(Problem(where, f"no target here builds {src}: its build is not "
                                    "ported (add XLA's headers, jax.ffi.include_dir(), to it)"))
            continue
        targets.append(m.group(1))
    if not targets:
        return None
    if "XLA_DIR" not in text:
        found = re.search(r"^find_package\s*\(\s*pybind11\b[^)]*\)[ \t]*\n", text, re.M)
        python = "Python_EXECUTABLE" if "PYBIND11_NEWPYTHON ON" in text else "PYTHON_EXECUTABLE"
        if found is None:
            found = re.search(r"^project\s*\((?:[^()]|\([^)]*\))*\)\s*\n", text, re.M)
            python = "Python_EXECUTABLE"
            block = "find_package(Python COMPONENTS Interpreter REQUIRED)\n" + \
                _XLA_DIR.format(python=python)
        else:
            block = _XLA_DIR.format(python=python)
        at = found.end() if found else 0
        after = "" if text[at:].startswith("\n") else "\n"
        text = text[:at] + "\n" + block + after + text[at:]
    for target in dict.fromkeys(targets):
        feature = re.compile(r"target_compile_features\s*\(\s*" + target +
                             r"\s+(PUBLIC|PRIVATE|INTERFACE)\s+cxx_std_(\d+)\s*\)")
        m = feature.search(text)
        if m and int(m.group(2)) < 17:
            text = text[:m.start(2)] + "17" + text[m.end(2):]
        if f"target_include_directories({target} PRIVATE ${{XLA_DIR}})" in text:
            continue
        add = re.search(r"^([ \t]*)(?:pybind11_add_module|nanobind_add_module|add_library)"
                        r"\s*\(\s*" + target + r"\b[^)]*\)[ \t]*\n", text, re.M)
        indent = add.group(1)     # as the target's own lines are (inside an if(), say)
        line = f"{indent}target_include_directories({target} PRIVATE ${{XLA_DIR}})\n"
        if not m:
            line += f"{indent}target_compile_features({target} PRIVATE cxx_std_17)\n"
        text = text[:add.end()] + line + text[add.end():]
    return text


def _pyproject(text: str) -> str:
    """pyproject text whose build needs jax (for its FFI headers)."""
    m = re.search(r"^\[build-system\][^\[]*?requires\s*=\s*\[([^\]]*)\]", text, re.M | re.S)
    if not m or re.search(r"""["']jax(?:lib)?\b""", m.group(1)):
        return text
    inner = m.group(1)
    stripped = inner.rstrip()
    if stripped.endswith(","):
        # one a line, with a trailing comma: the same again
        indent = re.search(r"\n([ \t]*)\S", inner)
        new = stripped + "\n" + (indent.group(1) if indent else "") + '"jax",' + \
            inner[len(stripped):]
    else:
        new = stripped + (", " if inner.strip() else "") + '"jax"'
    return text[:m.start(1)] + new + text[m.end(1):]


def port(root: Path, sources: list[Path], problems: list[Problem]) -> dict[Path, str]:
    """The build files of root, edited for the ported sources."""
    edits: dict[Path, str] = {}
    cmake = root / "CMakeLists.txt"
    rel = [str(s.relative_to(root)) for s in sources]
    if cmake.is_file():
        new = _cmake(cmake.read_text(), rel, "CMakeLists.txt:1", problems)
        if new is not None and new != cmake.read_text():
            edits[cmake] = new
    else:
        problems.append(Problem(f"{rel[0]}:1", "its build (no CMakeLists.txt at the tree's "
                                "root) is not ported yet: add jax.ffi.include_dir() to it"))
    edits.update(port_pyproject(root))
    return edits


def port_pyproject(root: Path) -> dict[Path, str]:
    """pyproject.toml edited so that its build has jax (XLA's FFI headers)."""
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        new = _pyproject(pyproject.read_text())
        if new != pyproject.read_text():
            return {pyproject: new}
    return {}
