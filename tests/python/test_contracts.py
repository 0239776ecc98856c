"""The Python side of docs/contracts.md: the records `ccshim.export --list
--tsv` writes have the page's fields in the page's order, and the ctypes
declarations ccshim.conform uses are the page's C declarations.  The C side
is checked against the same page by tests/doc/test_contracts.py."""
import ctypes
import io
import os
import pathlib
import re

import pytest

pytest.importorskip("jax")
pytest.importorskip("jax.export", reason="jax.export does not import in this JAX (JAX 0.5 "
                    "needs absl-py for it, which it does not install)")

from ccshim import conform  # noqa: E402
from ccshim.export import _cli  # noqa: E402

DOC = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "contracts.md").read_text()
MODULE = """module {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.custom_call @contract_k(%arg0) {api_version = 3 : i32, backend_config = "abc"} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""


def doc_records():
    block = re.search(r"```tsv\n(.*?)```", DOC, re.S).group(1)
    return {line.split("\t")[0]: line.split("\t") for line in block.splitlines() if line}


def test_list_tsv_writes_the_documented_records(tmp_path):
    good = tmp_path / "good.mlir"
    good.write_text(MODULE)
    fifo = tmp_path / "x.fifo"
    os.mkfifo(fifo)
    out = io.StringIO()
    assert _cli._report_list([str(good), str(fifo)], "tsv", out) == 2
    got = {line.split("\t")[0]: line.split("\t") for line in out.getvalue().splitlines()}
    want = doc_records()
    assert set(got) == set(want) == {"F", "C", "E"}
    for tag in want:
        assert len(got[tag]) == len(want[tag]), (tag, got[tag], want[tag])
    # The page's order: F kind, platforms, typed, built-in, rewritten; C
    # target, api_version, opaque bytes, signature, location; E the reason.
    assert got["F"][1:] == ["0", "text", "", "0", "0", "0"]
    assert got["C"][1:6] == ["0", "contract_k", "3", "3", "(f32[4]) -> f32[4]"]
    assert got["C"][6].startswith("loc(")
    assert got["E"][1] == "1" and "x.fifo: is a FIFO; expected a regular file" in got["E"][2]


_CTYPES = {"void*": ctypes.c_void_p, "int": ctypes.c_int, "const char*": ctypes.c_char_p,
           "const unsigned char*": ctypes.c_void_p, "size_t": ctypes.c_size_t,
           "void* const*": ctypes.POINTER(ctypes.c_void_p), "char*": ctypes.c_void_p,
           "char**": ctypes.POINTER(ctypes.c_char_p),
           "const char**": ctypes.POINTER(ctypes.c_char_p),
           "int*": ctypes.POINTER(ctypes.c_int),
           "void**": ctypes.POINTER(ctypes.c_void_p),
           "ccshim_conform_reference_fn": conform._REFERENCE_FN,
           "ccshim_conform_init_fn": conform._INIT_FN,
           "ccshim_conform_resolve_fn": conform._RESOLVE_FN}


def doc_params(name):
    """The parameter types of the page's C declaration of `name`."""
    lines = [line for block in re.findall(r"```c\n(.*?)```", DOC, re.S)
             for line in block.splitlines()]
    decl = next(line for line in lines if re.search(re.escape(name) + r"\)?\(", line))
    start = re.search(re.escape(name) + r"\)?\(", decl).end()
    params = decl[start:decl.rindex(")")]
    return [_CTYPES[re.sub(r"\s*\w+$", "", p.strip())] for p in params.split(",")]


@pytest.mark.parametrize("name, fn", [("ccshim_conform_reference_fn", "_REFERENCE_FN"),
                                      ("ccshim_conform_init_fn", "_INIT_FN"),
                                      ("ccshim_conform_resolve_fn", "_RESOLVE_FN")])
def test_the_callbacks_are_the_documented_ones(name, fn):
    fn = getattr(conform, fn)
    assert list(fn._argtypes_) == doc_params(name)
    assert fn._restype_ is ctypes.c_int


def test_the_engine_entry_points_are_declared_as_documented():
    engine = conform._engine()
    assert list(engine.ccshim_conform_embedded.argtypes) == doc_params("ccshim_conform_embedded")
    assert list(engine.ccshim_conform_option.argtypes) == [
        ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p),
        ctypes.POINTER(ctypes.c_int)] == doc_params("ccshim_conform_option")


def test_conform_options_come_from_the_engines_table():
    table = conform.options(conform._engine())
    assert {k for k, (_, where) in table.items() if where == 1} == {
        "--python", "--init", "--reference"}
    assert table["--api"] == (True, 2) and table["--json"] == (False, 0)
    assert table["--manifest"] == (True, 0)
