"""Atheris harness for ccshim.scan, the reader of `ccshim scan`'s Python and
Cython files: any bytes as a .py file, or as a .pyx file where the first
byte is odd (Cython's parser).  It is read (P, and its findings R and W,
each of the contract's 20 fields, docs/contracts.md section 4) or said not
read (one E, one line); any exception, a hang or a crash is a finding.  Run
by dev/run_fuzzers.sh with libFuzzer's flags, from its corpus and the scan
fixture's .py and .pyx files:

    python tests/fuzz/fuzz_scan_reader.py CORPUS_DIR -max_total_time=60
"""
import os
import sys
import tempfile

import atheris
import libcst  # noqa: F401  (imported uninstrumented: only ccshim's code is)

with atheris.instrument_imports(include=["ccshim"]):
    import ccshim.scan as cs
    from ccshim.scan._reader import FIELDS

HERE = tempfile.mkdtemp(prefix="ccshim-fuzz-scan-")
KINDS = {"registration", "call_site", "typed", "definition", "offered"}
PLATFORMS = {"cpu", "cuda", "rocm", "gpu", "sycl", "unknown"}


def one_input(data: bytes) -> None:
    name = "f.pyx" if data[:1] and data[0] & 1 else "f.py"
    path = os.path.join(HERE, name)
    with open(path, "wb") as f:
        f.write(data)
    out = cs.read_all([(path, name)])
    said = [r for r in out if r[0] in "PE"]
    assert len(said) == 1 and said[0][1] == 0, said
    if said[0][0] == "E":
        assert len(out) == 1 and said[0][2] and "\n" not in said[0][2], out
        return
    assert said[0][2] == data.count(b"\n") + 1, said
    for r in out[1:]:
        assert r[0] in "RW" and len(r) == 2 + len(FIELDS), r
        f = dict(zip(FIELDS, r[2:]))
        assert f["kind"] in KINDS and f["platform"] in PLATFORMS and f["line"] >= 1, f


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
