"""`ccshim conform` where it takes Python: kernels as projects ship them
(`--python MODULE[:ATTR] NAME`: capsules from extensions, some needing the
interpreter while they run) and XLA itself as the reference (`--reference
xla`: the legacy side through jaxlib's own legacy custom-call path).

* jaxlib 0.4.30's LAPACK capsules (a nanobind module's registrations(),
  reachable no other way), unchanged, against both references.
* A kernel that takes the GIL as Cython `with gil` kernels do
  (tests/conform/gil_ext.c, built here against this Python): conform from
  its library alone cannot even load it; with --python it runs.
* The XLA reference agrees with the invoker on conform's corpus of known
  outcomes (tests/conform/kernels.c): equal, different, within a
  tolerance, failed alike, failed differently, crashed, hung, exited,
  overran.
"""

import json
import os
import subprocess
import sys
import sysconfig

import pytest

from conftest import BUILD, ROOT

CCSHIM = BUILD / "tools" / "ccshim"
CORPUS = BUILD / "tests" / "libccshim_conform_kernels.so"
LAPACK = ROOT / ".cache" / "jaxlib-0.4.30" / "jaxlib" / "cpu" / "_lapack.so"


def conform(*args, timeout=300):
    p = subprocess.run([str(CCSHIM), "conform", *map(str, args)], capture_output=True,
                       text=True, timeout=timeout,
                       env={**os.environ, "CCSHIM_PYTHON": sys.executable})
    return p


def one(*args):
    p = conform(*args, "--json")
    assert p.stdout, p.stderr
    report = json.loads(p.stdout)
    return p.returncode, report["targets"][0], report["reference"]


def need_lapack():
    if not LAPACK.exists():
        pytest.skip(f"jaxlib 0.4.30 was not fetched ({LAPACK} is missing)")


GETRF = ("--api", "2", "--signature", "(s32[], s32[], s32[], f32[4,4]) -> (f32[4,4], s32[4], s32[])",
         "--arg-hex", "0=01000000", "--arg-hex", "1=04000000", "--arg-hex", "2=04000000")
POTRF = ("--api", "2", "--signature", "(s32[], s32[], s32[], f64[3,3]) -> (f64[3,3], s32[])",
         "--arg-hex", "0=00000000", "--arg-hex", "1=01000000", "--arg-hex", "2=03000000")


@pytest.mark.parametrize("reference", ["invoker", "xla"])
@pytest.mark.parametrize("name, form", [("lapack_sgetrf", GETRF), ("lapack_dpotrf", POTRF)])
def test_a_capsule_only_kernel_of_a_real_project(reference, name, form):
    need_lapack()
    rc, t, ref = one("--python", LAPACK, name, "--init", "initialize", *form,
                     "--reference", reference, "--runs", "4")
    assert rc == 0 and t["status"] == "equal" and t["equal"] == 4, t
    assert t["target"] == name and t["library"] == str(LAPACK)
    assert ("XLA's legacy custom-call path" in ref) == (reference == "xla"), ref
    assert ("ccshim's legacy invoker" in ref) == (reference == "invoker"), ref


@pytest.fixture(scope="module")
def gil_ext(tmp_path_factory):
    include = sysconfig.get_paths()["include"]
    if not os.path.exists(os.path.join(include, "Python.h")):
        pytest.skip(f"no Python.h in {include}: this Python has no headers to build against")
    out = tmp_path_factory.mktemp("gil") / f"ccshim_gil_ext{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-Wall", "-Werror", f"-I{include}",
                    str(ROOT / "tests" / "conform" / "gil_ext.c"), "-o", str(out)], check=True)
    return out


@pytest.mark.parametrize("reference", ["invoker", "xla"])
def test_a_kernel_that_takes_the_gil_runs_with_the_interpreter(gil_ext, reference):
    rc, t, _ = one("--python", gil_ext, "gil_scale_v1", "--api", "1",
                   "--signature", "(f64[8]) -> f64[8]", "--reference", reference)
    assert rc == 0 and t["status"] == "equal" and t["equal"] == 3, t


def test_without_python_the_same_kernel_cannot_even_load(gil_ext):
    p = conform(gil_ext, "gil_scale_v1", "--api", "1", "--signature", "(f64[8]) -> f64[8]")
    assert p.returncode == 2 and "undefined symbol: Py" in p.stderr, p.stderr


# conform's corpus: (symbol, api, signature, extra, the outcome both references give)
CORPUS_CASES = [
    ("copy_bytes_v3", "3", "(f32[24]) -> f32[24]", ["--opaque-hex", b"96".hex()], "equal"),
    ("copy_bytes_v3", "3", "(bf16[24]) -> bf16[24]", ["--opaque-hex", b"48".hex()], "equal"),
    ("copy_bytes_v3", "3", "(f64[]) -> f64[]", ["--opaque-hex", b"8".hex()], "equal"),
    ("copy_bytes_v3", "3", "(f32[0]) -> f32[0]", ["--opaque-hex", b"0".hex()], "equal"),
    ("split_v1", "1", "(f64[16]) -> (f64[16], s32[16])", [], "equal"),
    ("noisy_v2", "2", "(f32[64]) -> f32[64]", [], "differ"),
    ("rounding_v1", "1", "(f64[64]) -> f64[64]", [], "differ"),
    ("rounding_v1", "1", "(f64[64]) -> f64[64]", ["--rtol", "1e-9"], "equal"),
    ("refuse_v2", "2", "(f32[4]) -> f32[4]", [], "equal"),
    ("refuse_differently_v2", "2", "(f32[4]) -> f32[4]", [], "differ"),
    ("crash_v1", "1", "(f32[4]) -> f32[4]", [], "crashed"),
    ("spin_v1", "1", "(f32[4]) -> f32[4]", ["--timeout", "3", "--runs", "1"], "crashed"),
    ("exit_v2", "2", "(f32[4]) -> f32[4]", [], "crashed"),
    ("overrun_v1", "1", "(f32[15]) -> f32[15]", [], "overran"),
]


@pytest.mark.parametrize("symbol, api, sig, extra, outcome", CORPUS_CASES,
                         ids=[f"{c[0]}{'-' + '-'.join(c[3]) if c[3] else ''}"
                              for c in CORPUS_CASES])
def test_the_xla_reference_agrees_with_the_invoker_on_the_corpus(symbol, api, sig, extra,
                                                                  outcome):
    got = {}
    for reference in ("invoker", "xla"):
        rc, t, _ = one(CORPUS, symbol, "--api", api, "--signature", sig, "--runs", "2", *extra,
                       "--reference", reference)
        got[reference] = (rc, t["status"], t["both_failed"])
    assert got["invoker"] == got["xla"], got
    assert got["xla"][1] == outcome


def test_failures_compare_by_the_kernels_message_inside_xlas():
    rc, t, _ = one(CORPUS, "refuse_v2", "--api", "2", "--signature", "(f32[4]) -> f32[4]",
                   "--reference", "xla")
    assert rc == 0 and t["both_failed"] == t["runs"] == 3, t
    rc, t, _ = one(CORPUS, "refuse_differently_v2", "--api", "2", "--signature",
                   "(f32[4]) -> f32[4]", "--reference", "xla")
    assert rc == 1 and "legacy INTERNAL" in t["detail"] and "refused in process" in t["detail"]


def test_what_xla_cannot_be_given_is_refused_with_the_reason():
    rc, t, _ = one(CORPUS, "nested_sum_v1", "--api", "1", "--signature",
                   "((f32[4], f32[4]), f32[4]) -> f32[4]", "--tuple-operands", "nested",
                   "--reference", "xla")
    assert rc == 2 and t["status"] == "error", t
    assert "a tuple operand: a JAX call site passes arrays" in t["detail"], t


def test_the_table_says_which_reference():
    p = conform(CORPUS, "split_v1", "--api", "1", "--signature",
                "(f64[16]) -> (f64[16], s32[16])", "--reference", "xla", "--runs", "1")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1].startswith("reference: XLA's legacy custom-call path")
    p = conform(CORPUS, "split_v1", "--api", "1", "--signature",
                "(f64[16]) -> (f64[16], s32[16])", "--runs", "1")
    assert p.stdout.splitlines()[-1] == (
        "reference: ccshim's legacy invoker (XLA's legacy calling convention)")


@pytest.mark.parametrize("args, expected", [
    (["--reference", "tpu", CORPUS, "split_v1"], "--reference tpu: expected xla or invoker"),
    (["--init", "initialize", CORPUS, "split_v1"], "--init goes with --python"),
    (["--python", "no_such_module_at_all", "k"], "cannot import no_such_module_at_all"),
    (["--python", str(LAPACK)], "name the target: one of blas_ctrsm"),
    (["--python", str(LAPACK), "lapack_nothing", "--init", "initialize"],
     "has no entry 'lapack_nothing'"),
    (["--python", str(LAPACK), "lapack_spotrf_ffi", "--init", "initialize"],
     "is a typed-FFI handler, not a legacy kernel"),
    (["--python", str(LAPACK), "a", "b"], "one NAME expected after it"),
    (["--python", str(LAPACK) + ":nope"], "has no attribute 'nope'"),
    (["--manifest", "x.manifest", "--python", "m"], "--python is for one target"),
    ([CORPUS, "split_v1", "--reference", "xla", "--against", "lib.so:h"],
     "--against compares a native port"),
])
def test_bad_options_are_one_line_and_exit_2(args, expected):
    if str(LAPACK) in map(str, args):
        need_lapack()
    p = conform(*args, "--api", "1", "--signature", "(f32[4]) -> f32[4]")
    assert p.returncode == 2 and expected in p.stderr, (p.returncode, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_help_lists_python_and_reference():
    p = conform("--help")
    assert p.returncode == 0
    for word in ("--python MODULE[:ATTR] [NAME]", "--reference xla|invoker", "--init FUNC",
                 "examples:"):
        assert word in p.stdout
