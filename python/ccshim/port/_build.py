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


# GCC refuses XLA's c_api.h under -pedantic (its API struct names fields as
# the typedefs of their types: "changes meaning"); -fpermissive makes that a
# warning, which the SYSTEM include then keeps quiet.
_PERMISSIVE = """\
# XLA's c_api.h does not pass GCC's -pedantic (fields named as their types).
target_compile_options({target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-fpermissive>)
"""


def _target_calls(text: str) -> dict[str, tuple[int, int]]:
    """Each pybind11_add_module / nanobind_add_module / add_library call:
    its target and its span, to its closing parenthesis (comments and
    quoted strings skipped: PyBaMM's sources list has "(SUNDIALS)" in a
    comment)."""
    found = {}
    for m in re.finditer(r"\b(?:pybind11_add_module|nanobind_add_module|add_library)\s*\(\s*"
                         r"(\w+)", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            c = text[i]
            if c == "#":
                i = text.find("\n", i)
                i = len(text) if i < 0 else i
                continue
            if c == '"':
                i = text.find('"', i + 1)
                i = len(text) if i < 0 else i
            depth += {"(": 1, ")": -1}.get(c, 0)
            i += 1
        found.setdefault(m.group(1), (m.start(), i))
    return found


# A source named relative to the CMakeLists.txt: as it is, or under the
# folder CMake names that (kepler_jax's ${CMAKE_CURRENT_LIST_DIR}/lib/...).
_HERE = r"(?:(?<![\w/.$])|\$\{CMAKE_CURRENT_(?:LIST|SOURCE)_DIR\}/)"


def _variables(text: str) -> dict[str, str]:
    """The text each variable is given by set(VAR ...) and list(APPEND VAR
    ...) (sphericart-jax's `set(CPU_SOURCES ...)`), all of them joined."""
    found: dict[str, str] = {}
    for m in re.finditer(r"^[ \t]*(?:set|list\s*\(\s*APPEND)\s*\(?\s*(\w+)\s+([^)]*)\)",
                         text, re.M | re.I):
        found[m.group(1)] = found.get(m.group(1), "") + " " + m.group(2)
    return found


def _builds(call: str, src: str, variables: dict[str, str]) -> bool:
    """Whether a target's call names src: itself, or through a variable
    the call reads (one level: what set() gives it)."""
    named = re.compile(_HERE + re.escape(src) + r"\b")
    return bool(named.search(call)) or any(
        named.search(variables.get(var, "")) for var in re.findall(r"\$\{(\w+)\}", call))


def _cmake(text: str, rel_sources: list[str], where: str,
           problems: list[Problem]) -> str | None:
    """CMakeLists text with the targets building rel_sources given XLA's
    headers and C++17; None (and a problem) when no target builds them."""
    targets = []
    adds = _target_calls(text)
    variables = _variables(text)
    for src in rel_sources:
        found = [target for target, (start, end) in adds.items()
                 if _builds(text[start:end], src, variables)]
        if not found:
            problems.append(Problem(where, f"no target here builds {src}: its build is not "
                                    "ported (add XLA's headers, jax.ffi.include_dir(), to it)"))
            continue
        targets.append(found[0])
    if not targets:
        return None
    if "XLA_DIR" not in text:
        found = re.search(r"^find_package\s*\(\s*pybind11\b[^)]*\)[ \t]*\n", text, re.M)
        python = "Python_EXECUTABLE" if re.search(r"PYBIND11_(?:NEW|FIND)PYTHON ON", text) \
            else "PYTHON_EXECUTABLE"
        if found is None:
            # after the project's own find_package(Python ...), if it has one
            found = re.search(r"^find_package\s*\(\s*(Python3?)\b[^)]*\)[ \t]*\n", text, re.M)
            python = f"{found.group(1)}_EXECUTABLE" if found else "Python_EXECUTABLE"
        if found is None:
            found = re.search(r"^project\s*\((?:[^()]|\([^)]*\))*\)[ \t]*\n", text, re.M)
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
        if re.search(r"target_include_directories\(" + target + r" (?:SYSTEM )?PRIVATE "
                     r"\$\{XLA_DIR\}\)", text):
            continue
        start, end = _target_calls(text)[target]
        line_start = text.rfind("\n", 0, start) + 1
        indent = re.match(r"[ \t]*", text[line_start:]).group(0)   # as its own lines are
        # SYSTEM: the headers' own warnings are not the project's (tfc builds -Werror)
        line = f"{indent}target_include_directories({target} SYSTEM PRIVATE ${{XLA_DIR}})\n"
        if not m:
            line += f"{indent}target_compile_features({target} PRIVATE cxx_std_17)\n"
        if re.search(r"-pedantic", text):
            line += "".join(indent + l + "\n"
                            for l in _PERMISSIVE.format(target=target).splitlines())
        end = text.index("\n", end) + 1 if "\n" in text[end:] else len(text)
        text = text[:end] + line + text[end:]
    return text


def _pyproject(text: str) -> str:
    """pyproject text whose build needs jax (for its FFI headers)."""
    m = re.search(r"^\[build-system\][^\[]*?requires\s*=\s*\[([^\]]*)\]", text, re.M | re.S)
    if not m or re.search(r"""["']jax(?:lib)?\b""", m.group(1)):
        return text
    inner = m.group(1)
    # the last requirement written (not one in a comment: PyBaMM's list ends
    # with two comment lines)
    items = [q for q in re.finditer(r"""("[^"\n]*"|'[^'\n]*')([ \t]*,)?""", inner)
             if "#" not in inner[inner.rfind("\n", 0, q.start()) + 1:q.start()]]
    if not items:
        new = '"jax"' + inner if not inner.strip() else inner + '"jax", '
    elif "\n" in inner.strip():
        # one requirement a line: "jax" on its own line, as the last one is
        last = items[-1]
        line = inner[inner.rfind("\n", 0, last.start()) + 1:]
        indent = line[:len(line) - len(line.lstrip())]
        comma = "," if last.group(2) else ""
        new = inner[:last.end()] + ("" if comma else ",") + "\n" + indent + '"jax"' + comma + \
            inner[last.end():]
    else:
        last = items[-1]
        new = inner[:last.end(1)] + ', "jax"' + inner[last.end(1):]
    return text[:m.start(1)] + new + text[m.end(1):]


def port(root: Path, sources: list[Path], problems: list[Problem]) -> dict[Path, str]:
    """The build files of root, edited for the ported sources."""
    edits: dict[Path, str] = {}
    builds: dict[Path, list[str]] = {}
    rest = []       # built by no CMakeLists.txt: setup.py's, if any
    for source in sources:
        cmake = _cmake_of(root, source)
        if cmake is None:
            rest.append(source)
            continue
        builds.setdefault(cmake, []).append(source.relative_to(cmake.parent).as_posix())
    for cmake, rel in builds.items():
        new = _cmake(cmake.read_text(), rel, f"{cmake.relative_to(root)}:1", problems)
        if new is not None and new != cmake.read_text():
            edits[cmake] = new
    if rest and (root / "setup.py").is_file():
        from ._setup import setup_py   # libcst: only where a port runs
        new = setup_py(root, rest, problems)
        if new is not None:
            edits[root / "setup.py"] = new
    elif rest:
        problems += [Problem(f"{s.relative_to(root)}:1", "its build (no CMakeLists.txt in its "
                             "folder or above, no setup.py at the tree's root) is not ported "
                             "yet: add jax.ffi.include_dir() to it") for s in rest]
    edits.update(port_pyproject(root))
    return edits


def _cmake_of(root: Path, source: Path) -> Path | None:
    """The CMakeLists.txt nearest above source (up to root) that names it;
    else root's, if any (which then says that no target builds it)."""
    folder = source.parent
    while True:
        cmake = folder / "CMakeLists.txt"
        if cmake.is_file() and source.relative_to(folder).as_posix() in cmake.read_text():
            return cmake
        if folder == root or root not in folder.parents:
            break
        folder = folder.parent
    return root / "CMakeLists.txt" if (root / "CMakeLists.txt").is_file() else None


def port_pyproject(root: Path) -> dict[Path, str]:
    """pyproject.toml edited so that its build has jax (XLA's FFI headers)."""
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        new = _pyproject(pyproject.read_text())
        if new != pyproject.read_text():
            return {pyproject: new}
    return {}
