"""The .pyx reader of `ccshim port` and `ccshim scan` (python/ccshim/_pyx.py), Cython's own
parser: what reads like code in a comment, a string or a docstring is not
read as code; a signature across lines, with a comment in it, and an export
without parentheses around its kernel are; a file Cython's parser does not
take is said, not ported, and nothing else of the tree is lost."""
import re
import subprocess
import sys

import pytest

from conftest import ROOT

pytest.importorskip("Cython", reason="the .pyx reader is Cython's parser")

TRICKY = '''\
"""Kernels.  cdef void fake(void* out, const void** ins): in a docstring."""
from cpython.pycapsule cimport PyCapsule_New

# export("commented", <void*>(k)) is a comment, not an export.
NOTE = 'export("quoted", <void*>(k))'


cdef void k(void* out,          # the result
            const void** ins) nogil:
    (<float*>out)[0] = (<const float*>ins[0])[0]


targets = {}

cdef export(unicode name, void* fn):
    targets[name] = PyCapsule_New(fn, "xla._CUSTOM_CALL_TARGET", NULL)

export("k", <void*>k)
'''


def _port(tree):
    return subprocess.run([sys.executable, "-m", "ccshim.port", str(tree)],
                          env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300)


def test_only_code_is_read_and_a_signature_across_lines_is_ported(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "k.pyx").write_text(TRICKY)
    done = _port(tmp_path)
    assert done.returncode == 0, done.stderr
    # only the build is left (no setup.py here): nothing said of the
    # comment, the string or the docstring
    assert done.stderr.splitlines() == [
        "ccshim port: pkg/k.pyx:1: not ported: its build (no setup.py at the tree's root) is "
        "not ported yet: compile the handlers' source into the extension"], done.stderr
    assert "-cdef void k(void* out,          # the result\n+cdef public void k(void* out,  " \
        "        # the result\n             const void** ins) nogil:\n" in done.stdout, done.stdout
    assert '-export("k", <void*>k)\n+export("k", <void*>k_ffi)\n' in done.stdout
    # C gets the parameters as written, less the comment, whitespace joined
    assert "+void k(void* out, const void** ins);\n" in done.stdout, done.stdout
    assert "fake" not in done.stdout and "commented" not in done.stdout


def test_a_file_cythons_parser_does_not_take_is_said_and_the_rest_ported(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "bad.pyx").write_text(
        'cdef void k(void* out, const void** ins:\n    pass\n'
        'x = "xla._CUSTOM_CALL_TARGET"\n')
    (tmp_path / "pkg" / "k.pyx").write_text(TRICKY)
    done = _port(tmp_path)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "bad.pyx" in line]
    assert len(said) == 1 and said[0].startswith(
        "ccshim port: pkg/bad.pyx:3: not ported: not read: Cython's parser does not take it ("), \
        said
    assert "pkg/k_ffi.cpp" in done.stdout
