"""The Python side of docs/contracts.md: the records `ccshim.export --list
--tsv` writes have the page's fields in the page's order, and the ctypes
side of ccshim.conform's control record is the page's.  The C side
is checked against the same page by tests/doc/test_contracts.py."""
import io
import os
import pathlib
import re
import struct
import sys

import pytest

pytest.importorskip("jax")
pytest.importorskip("jax.export", reason="jax.export does not import in this JAX (JAX 0.5 "
                    "needs absl-py for it, which it does not install)")

from ccshim import conform  # noqa: E402
from ccshim.export import _cli  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "doc"))
import doc_tables  # noqa: E402

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


def doc_table(heading):
    return doc_tables.doc_table(DOC, heading)


def test_the_control_record_is_the_documented_one():
    control = doc_table("The control record, little-endian")
    side = doc_table("The side (`side` in `conform.h`)")
    # Each struct: the page's struct column in order, and each field at its offset.
    for rows, packed, last in ((control, conform.CONTROL, "result"), (side, conform.SIDE, None)):
        fmt = "<" + "".join(r[3] for r in rows if r[1] != last)
        assert packed.format == fmt, (packed.format, fmt)
        for i, r in enumerate(rows):
            assert int(r[0]) == struct.calcsize("<" + "".join(x[3] for x in rows[:i])), r
    assert [r[1] for r in control][-1] == "result" and \
        int(control[-1][0]) == conform.CONTROL.size
    assert conform.BUFFER.format == "<QQQ" and "24 bytes" in DOC
    assert conform.MAGIC.decode() == control[0][5].strip("`")


def test_the_python_side_takes_the_documented_command_line():
    line = re.search(r"PYTHON -c BOOT conform ccshim.conform (.*)", DOC).group(1)
    documented = set(re.findall(r"--[a-z]+(?:-[a-z]+)*", line))
    parser_options = {a.option_strings[0] for a in conform._parser()._actions
                      if a.option_strings and a.option_strings[0] != "-h"}
    assert documented == parser_options, (documented, parser_options)


# Section 4's example files, as the page describes them.
SCAN_SOURCES = {
    "a.py": '''from jax.interpreters import mlir
from jax.lib import xla_client
import ext

xla_client.register_custom_call_target("k_v1", ext.k_v1(), platform="cpu")


def register(name, capsule):
    xla_client.register_custom_call_target(name, capsule, platform="cpu")


def lower(ctx, x):
    return mlir.custom_call("k_v1", result_types=[x.type], operands=[x]).results
''',
    "b.py": '''import a

a.register("k_w", a.ext.k_w())
''',
    "c.py": 'x = "custom_call\n',
    "d.pyx": '''from cpython.pycapsule cimport PyCapsule_New
targets = {}
cdef put(name, void* fn):
    targets[name] = PyCapsule_New(fn, "xla._CUSTOM_CALL_TARGET", NULL)
cdef void k_pyx(void* out, const void** ins) nogil:
    pass
put("k_pyx", <void*>(k_pyx))
''',
}


def test_scan_writes_the_documented_py_records(tmp_path):
    pytest.importorskip("libcst")
    pytest.importorskip("Cython")
    from ccshim import scan
    from ccshim.scan import _reader

    for name, text in SCAN_SOURCES.items():
        (tmp_path / name).write_text(text)
    got = [[str(x) for x in r] for r in
           scan.records([(str(tmp_path / n), n) for n in SCAN_SOURCES])]
    block = re.search(r"```records\n(.*?)```", DOC, re.S).group(1)
    assert got == [line.split("\t") for line in block.splitlines()]
    fields = doc_tables.doc_table(DOC, "The 18 finding fields, in order")
    assert [r[1] for r in fields] == _reader.FIELDS
