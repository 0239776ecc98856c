"""The setup.py build of Cython extensions whose kernels were ported (_cython):
each handler source, MODULE_ffi.cpp, joins its .pyx's sources, and every
extension that compiles one gets XLA's FFI headers (jax.ffi.include_dir())
after the `X = cythonize(...)` that makes them.  Edited with libcst, so that
the file's comments and layout are kept.

A .pyx is found as a string in a list or tuple of sources, "M.pyx" or
"FOLDER/M.pyx" (an f-string's folder, f"{PATH}/M.pyx", is taken as it is),
and the handler source goes right after it, written the same way.  Where the
source is f"...{mod}.pyx" in a comprehension `for mod in (...)` that names
the module (mpi4jax's setup.py), the handler source is added to the
extension's sources after cythonize instead.  Anything else is said, and
the build is not ported.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, ParentNodeProvider

from ._gpu_lowering import import_name
from ._report import Problem

_INCLUDE = """\
# XLA's FFI headers, as jaxlib ships them, for the typed XLA FFI handlers
# compiled beside the Cython kernels ({names}).
from jax import ffi as jax_ffi

handlers = {handlers}
for ext in {var}:
{late}    if any(os.path.basename(source) in handlers for source in ext.sources):
        ext.include_dirs.append(jax_ffi.include_dir())
{stdcxx}"""

# Where setup.py links with a compiler of its own (mpicc, a C driver), the
# C++ runtime the handlers need is named.
_STDCXX = """\
        if sys.platform.startswith("linux"):
            ext.libraries.append("stdc++")   # linked by this setup's own compiler
"""

_LATE = """\
    # The handlers' source joins the module's (named by a comprehension).
    for source in list(ext.sources):
        stem = os.path.splitext(os.path.basename(source))[0]
        if stem in {stems}:
            ext.sources.append(os.path.join(os.path.dirname(source), stem + "_ffi.cpp"))
"""

_STRING = m.SimpleString() | m.FormattedString()


def _tuple(names: list[str]) -> str:
    return "(" + ", ".join(f'"{n}"' for n in names) + ("," if len(names) == 1 else "") + ")"


def _named(node: cst.BaseExpression, name: str) -> str | None:
    """The path a string literal gives (its text between the quotes) where
    it names the file name (`name` or `.../name`); None otherwise."""
    if isinstance(node, cst.SimpleString):
        text = node.raw_value
    elif isinstance(node, cst.FormattedString) and node.parts and \
            isinstance(node.parts[-1], cst.FormattedStringText):
        text = node.parts[-1].value      # (its folder before: {PATH}/)
    else:
        return None
    return text if text == name or text.endswith("/" + name) else None


def _renamed(code: str, name: str, new: str) -> cst.BaseExpression:
    """The string literal code (ending in name and its quote) naming new."""
    at = code.rindex(name)
    return cst.parse_expression(code[:at] + new + code[at + len(name):])


def _names(loop: cst.CompFor, var: str, stem: str) -> bool:
    """Whether loop is `for var in (...)` over literals that name stem."""
    return m.matches(loop.target, m.Name(var)) and isinstance(loop.iter, (cst.Tuple, cst.List)) \
        and stem in {e.value.evaluated_value for e in loop.iter.elements
                     if isinstance(e.value, cst.SimpleString)}


class _Reader:
    """What setup.py's tree says: the source string that names each .pyx,
    each comprehension over module names, the cythonize statement."""

    def __init__(self, module: cst.Module):
        self.module = module
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self.parent = wrapper.resolve(ParentNodeProvider)
        self.strings = m.findall(module, _STRING)       # in the file's order

    def source(self, name: str) -> cst.BaseExpression | None:
        """The first string naming name."""
        return next((s for s in self.strings if _named(s, name) is not None), None)

    def in_list(self, node: cst.CSTNode) -> bool:
        element = self.parent.get(node)
        return isinstance(element, cst.Element) and \
            isinstance(self.parent.get(element), (cst.List, cst.Tuple))

    def in_comprehension(self, stem: str) -> bool:
        """Whether a source is f"...{mod}.pyx" in a comprehension `for mod in
        (...)` whose literals name stem (mpi4jax's setup.py)."""
        for s in self.strings:
            if not (isinstance(s, cst.FormattedString) and len(s.parts) >= 2 and m.matches(
                    s.parts[-1], m.FormattedStringText(value=".pyx")) and
                    m.matches(s.parts[-2], m.FormattedStringExpression(expression=m.Name()))):
                continue
            var, node = s.parts[-2].expression.value, self.parent.get(s)
            while node is not None:
                if isinstance(node, (cst.ListComp, cst.GeneratorExp, cst.SetComp)) and \
                        _names(node.for_in, var, stem):
                    return True
                node = self.parent.get(node)
        return False

    def cythonize(self) -> cst.SimpleStatementLine | None:
        """The statement `X = cythonize(...)`."""
        call = m.Call(func=m.Name("cythonize") | m.Attribute(attr=m.Name("cythonize")))
        return next(iter(m.findall(self.module, m.SimpleStatementLine(body=[
            m.Assign(targets=[m.AssignTarget(target=m.Name())], value=call)]))), None)


class _Edit(cst.CSTTransformer):
    """Each found source string followed by its handler source's; the block
    after the cythonize statement."""

    def __init__(self, added: dict[int, cst.BaseExpression], after: cst.CSTNode,
                 block: list[cst.BaseStatement]):
        super().__init__()
        self.added, self.after, self.block = added, after, block

    def _elements(self, original, updated):
        elements = []
        for old, new in zip(original.elements, updated.elements):
            source = self.added.get(id(old.value))
            if source is None:
                elements.append(new)
                continue
            elements += [new.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(
                " "))), cst.Element(source, comma=new.comma)]
        return updated.with_changes(elements=elements)

    leave_List = leave_Tuple = _elements

    def _body(self, original, updated):
        body = list(updated.body)
        for i, old in enumerate(original.body):
            if old is self.after:
                body[i + 1:i + 1] = self.block
        return updated.with_changes(body=body)

    leave_Module = leave_IndentedBlock = _body


def setup_py(root: Path, exts: list, problems: list[Problem]) -> str | None:
    """setup.py's text with each handler source compiled into its .pyx's
    extension (exts: _cython.CythonExtension), given XLA's headers; None
    (and a problem) where it cannot."""
    setup = root / "setup.py"
    where = f"{exts[0].path.relative_to(root)}:1"
    if not setup.is_file():
        problems.append(Problem(where, "its build (no setup.py at the tree's root) is not ported "
                                "yet: compile the handlers' source into the extension"))
        return None
    module = cst.parse_module(setup.read_text())
    read = _Reader(module)
    late, added = [], {}      # late: modules named in a comprehension
    for ext in exts:
        rel, name = str(ext.path.relative_to(root)), ext.path.name
        lit = read.source(name)
        if lit is None and read.in_comprehension(ext.stem):
            late.append(ext.stem)
            continue
        if lit is None or not read.in_list(lit) or not (
                isinstance(lit, cst.FormattedString) or rel.endswith(_named(lit, name))):
            problems.append(Problem("setup.py:1", f"no Extension here names {rel}: its build is "
                                    f"not ported (add {ext.stem}_ffi.cpp to its sources)"))
            return None
        added[id(lit)] = _renamed(module.code_for_node(lit), name, f"{ext.stem}_ffi.cpp")
    after = read.cythonize()
    if after is None:
        problems.append(Problem("setup.py:1", "no `X = cythonize(...)` here: XLA's headers "
                                "(jax.ffi.include_dir()) not added to its extensions"))
        return None
    linker = m.findall(module, m.Call(func=m.Attribute(attr=m.Name("set_executable"))))
    block = cst.parse_module(_INCLUDE.format(
        var=after.body[0].targets[0].target.value,
        handlers=_tuple([f"{e.stem}_ffi.cpp" for e in exts]),
        names=", ".join(f"{e.stem}_ffi.cpp" for e in exts),
        late=_LATE.format(stems=_tuple(late)) if late else "",
        stdcxx=_STDCXX if linker else ""))
    # a blank line first; blank lines unindented (as the file's own are)
    statements = [s.with_changes(leading_lines=[
        line.with_changes(indent=False) if line.comment is None else line
        for line in ([cst.EmptyLine(), *block.header] if i == 0 else []) + list(s.leading_lines)])
        for i, s in enumerate(block.body)]
    module = module.visit(_Edit(added, after, statements))
    for name in ("sys", "os"):
        imported = m.SimpleStatementLine(body=[m.Import(names=[
            m.ZeroOrMore(), m.ImportAlias(name=m.Name(name), asname=None), m.ZeroOrMore()])])
        if not any(m.matches(s, imported) for s in module.body):
            module = import_name(module, name)
    return module.code
