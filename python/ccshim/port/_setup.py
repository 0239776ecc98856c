"""The setup.py build of a pybind11 C++ extension whose source was ported
(harmonica's form): the ``Pybind11Extension(...)`` (or ``Extension(...)``)
whose sources name it gets XLA's FFI headers, ``jax.ffi.include_dir()``,
among its ``include_dirs``, and C++17, which those headers need
(Pybind11Extension's ``cxx_std=17``; for a plain Extension whose sources
are all C++, ``-std=c++17`` among its ``extra_compile_args``).  Edited with
libcst, so that the file's comments and layout are kept.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, PositionProvider

from ._report import Problem

_CXX = (".cpp", ".cc", ".cxx", ".c++", ".C")
_IMPORT = """\
# XLA's FFI headers, as jaxlib ships them, for the typed XLA FFI handlers.
from jax import ffi as jax_ffi
"""
_HEADERS = "jax_ffi.include_dir()"


def _kwarg(call: cst.Call, name: str) -> cst.Arg | None:
    return next((a for a in call.args if a.keyword and a.keyword.value == name), None)


def _strings(node: cst.BaseExpression) -> list[str]:
    return [s.evaluated_value for s in m.findall(node, m.SimpleString())
            if isinstance(s.evaluated_value, str)]


def _sources(call: cst.Call) -> cst.BaseExpression | None:
    arg = _kwarg(call, "sources")
    if arg is None:
        positional = [a for a in call.args if a.keyword is None]
        arg = positional[1] if len(positional) > 1 else None
    return arg.value if arg else None


def _new_arg(name: str, code: str, like: cst.Arg) -> cst.Arg:
    """keyword=code laid out as the call's last argument was."""
    return cst.Arg(cst.parse_expression(code), keyword=cst.Name(name),
                   equal=like.equal if like.keyword else cst.AssignEqual(
                       cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))


class _Edit(cst.CSTTransformer):
    def __init__(self, rel: set[str], where, problems: list[Problem]):
        super().__init__()
        self.rel, self.where, self.problems = rel, where, problems
        self.found: set[str] = set()

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        name = cst.Module([]).code_for_node(original.func).split(".")[-1]
        if name not in ("Pybind11Extension", "Extension"):
            return updated
        sources = _sources(original)
        listed = set(_strings(sources)) if sources is not None else set()
        hits = {r for r in self.rel if r in listed}
        if not hits:
            return updated
        self.found |= hits
        if m.findall(original, m.Call(func=m.Attribute(attr=m.Name("include_dir")))):
            return updated      # already has the headers
        if name == "Extension" and not all(s.endswith(_CXX) for s in listed):
            self.problems.append(Problem(self.where(original), "an Extension that compiles "
                                         "C as well as C++: C++17 (which XLA's FFI headers "
                                         "need) is not added; the compiler's default is"))
        return self._edit(updated, name == "Pybind11Extension", all(
            s.endswith(_CXX) for s in listed))

    def _edit(self, call: cst.Call, pybind11: bool, cxx_only: bool) -> cst.Call:
        args = list(call.args)
        last = args[-1]
        sep = args[-2].comma if len(args) > 1 else cst.Comma(
            whitespace_after=cst.SimpleWhitespace(" "))
        extra = []
        include = _kwarg(call, "include_dirs")
        if include is not None and isinstance(include.value, cst.List):
            elements = list(include.value.elements)
            if elements:
                elements[-1] = elements[-1].with_changes(comma=cst.Comma(
                    whitespace_after=cst.SimpleWhitespace(" ")))
            elements.append(cst.Element(cst.parse_expression(_HEADERS)))
            args = [a.with_changes(value=a.value.with_changes(elements=elements))
                    if a is include else a for a in args]
        elif include is not None:
            code = cst.Module([]).code_for_node(include.value)
            args = [a.with_changes(value=cst.parse_expression(f"list({code}) + [{_HEADERS}]"))
                    if a is include else a for a in args]
        else:
            extra.append(_new_arg("include_dirs", f"[{_HEADERS}]", last))
        if pybind11:
            std = _kwarg(call, "cxx_std")
            if std is None:
                extra.append(_new_arg("cxx_std", "17", last))
            elif isinstance(std.value, cst.Integer) and int(std.value.value) < 17:
                args = [a.with_changes(value=cst.Integer("17")) if a is std else a for a in args]
        elif cxx_only:
            flags = _kwarg(call, "extra_compile_args")
            if flags is None:
                extra.append(_new_arg("extra_compile_args", '["-std=c++17"]', last))
            elif isinstance(flags.value, cst.List) and not any(
                    s.startswith("-std=") for s in _strings(flags.value)):
                elements = list(flags.value.elements)
                elements[-1] = elements[-1].with_changes(comma=cst.Comma(
                    whitespace_after=cst.SimpleWhitespace(" ")))
                elements.append(cst.Element(cst.SimpleString('"-std=c++17"')))
                args = [a.with_changes(value=a.value.with_changes(elements=elements))
                        if a is flags else a for a in args]
        if not extra:
            return call.with_changes(args=args)
        # the new arguments after the last, each on its line as the others
        # are, the call's closing comma and layout after them
        args[-1] = args[-1].with_changes(comma=sep, whitespace_after_arg=cst.SimpleWhitespace(""))
        extra = [a.with_changes(comma=sep) for a in extra]
        extra[-1] = extra[-1].with_changes(comma=last.comma,
                                           whitespace_after_arg=last.whitespace_after_arg)
        return call.with_changes(args=args + extra)


def _import(module: cst.Module) -> cst.Module:
    """module with `from jax import ffi as jax_ffi` after its imports."""
    body = list(module.body)
    imports = [i for i, s in enumerate(body) if isinstance(s, cst.SimpleStatementLine) and
               any(isinstance(x, (cst.Import, cst.ImportFrom)) for x in s.body)]
    at = imports[-1] + 1 if imports else 0
    comment, line = _IMPORT.splitlines()
    stmt = cst.parse_statement(line + "\n").with_changes(
        leading_lines=[cst.EmptyLine(comment=cst.Comment(comment))])
    body[at:at] = [stmt]
    return module.with_changes(body=body)


def setup_py(root: Path, sources: list[Path], problems: list[Problem]) -> str | None:
    """root's setup.py with the extensions that compile sources given XLA's
    headers and C++17; None where it has none (said in problems)."""
    setup = root / "setup.py"
    rel = {str(s.relative_to(root)) for s in sources}
    first = f"{sorted(rel)[0]}:1"
    if not setup.is_file():
        problems.append(Problem(first, "its build (no CMakeLists.txt or setup.py at the tree's "
                                "root) is not ported yet: add jax.ffi.include_dir() to it"))
        return None
    text = setup.read_text()
    wrapper = MetadataWrapper(cst.parse_module(text))
    positions = wrapper.resolve(PositionProvider)
    edit = _Edit(rel, lambda node: f"setup.py:{positions[node].start.line}", problems)
    new = wrapper.visit(edit)
    for source in sorted(rel - edit.found):
        problems.append(Problem("setup.py:1", f"no Extension here names {source}: its build is "
                                "not ported (add jax.ffi.include_dir() to it)"))
    if not edit.found or new.code == text:
        return None
    if "jax_ffi" not in text:
        new = _import(new)
    return new.code
