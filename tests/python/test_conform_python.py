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

from conftest import BUILD, ROOT, cached, fixture_missing

CCSHIM = BUILD / "tools" / "ccshim"
CORPUS = BUILD / "tests" / "libccshim_conform_kernels.so"
LAPACK = cached("jaxlib-0.4.30") / "jaxlib" / "cpu" / "_lapack.so"


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
        fixture_missing(f"jaxlib 0.4.30 was not fetched ({LAPACK} is missing)")


GETRF = ("--api", "2", "--signature", "(s32[], s32[], s32[], f32[4,4]) -> (f32[4,4], s32[4], s32[])",
         "--arg-hex", "0=01000000", "--arg-hex", "1=04000000", "--arg-hex", "2=04000000")
POTRF = ("--api", "2", "--signature", "(s32[], s32[], s32[], f64[3,3]) -> (f64[3,3], s32[])",
         "--arg-hex", "0=00000000", "--arg-hex", "1=01000000", "--arg-hex", "2=03000000")


@pytest.mark.parametrize("reference", ["invoker", "xla"])
@pytest.mark.parametrize("name, form", [("lapack_sgetrf", GETRF), ("lapack_dpotrf", POTRF)])
def test_a_capsule_only_kernel_of_a_real_project(reference, name, form):
    need_lapack()
    rc, t, ref = one("--python", LAPACK, name, "--init", "initialize", *form,
                     "--reference", reference, "--runs", "2")
    assert rc == 0 and t["status"] == "equal" and t["equal"] == 2, t
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
                   "--reference", "xla", "--runs", "2")
    assert rc == 0 and t["both_failed"] == t["runs"] == 2, t
    rc, t, _ = one(CORPUS, "refuse_differently_v2", "--api", "2", "--signature",
                   "(f32[4]) -> f32[4]", "--reference", "xla", "--runs", "2")
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
    (["--init", "initialize", CORPUS, "split_v1"], "--init, --python-path and --restore-jax "
     "go with --python"),
    (["--restore-jax", CORPUS, "split_v1"], "go with --python (its module)"),
    (["--python", "no_such_module_at_all", "k"], "cannot import no_such_module_at_all"),
    (["--python", str(LAPACK)], "name the target: one of blas_ctrsm"),
    (["--python", str(LAPACK), "lapack_nothing", "--init", "initialize"],
     "has no entry 'lapack_nothing'"),
    (["--python", str(LAPACK), "lapack_spotrf_ffi", "--init", "initialize"],
     "is a typed-FFI handler, not a legacy kernel"),
    (["--python", str(LAPACK), "a", "b"], "one NAME expected after it"),
    (["--python", str(LAPACK) + ":nope"], "has no attribute 'nope'"),
    (["--manifest", "x.manifest", "--python", "m"],
     "--python goes on a manifest's lines, not beside --manifest"),
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


# --- Issue 21: a module kept alive, --python in manifests, --init in the child ----

# A kernel that, like tfc 1.4.0's, needs its module while it runs: a ctypes
# callback (a CPU v1 kernel) that finds its state through its module, as
# `import` would give it, and aborts where the module is gone (tfc's kernel
# looks an object up by id, and crashed when the module loaded from a path
# was collected).
GLOBALS_MODULE = """
import ctypes, os, sys, time

STATE = {"scale": 3.0}
V1 = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))


def _scale(out, ins):
    module = sys.modules.get(__name__)
    if module is None or getattr(module, "STATE", None) is not STATE:
        os.abort()
    src = ctypes.cast(ins[0], ctypes.POINTER(ctypes.c_float))
    dst = ctypes.cast(out, ctypes.POINTER(ctypes.c_float))
    for i in range(4):
        dst[i] = src[i] * module.STATE["scale"]


KERNEL = V1(_scale)


def registrations():
    return {"scale_v1": KERNEL}


def not_a_mapping():
    return 12345


def exits():
    os._exit(0)


def raises():
    raise ValueError("no licence file")


def hangs():
    time.sleep(600)


def fine():
    STATE["scale"] = 3.0
"""
SCALE = ("--api", "1", "--signature", "(f32[4]) -> f32[4]")


@pytest.fixture
def globals_module(tmp_path):
    path = tmp_path / "kernels_with_globals.py"
    path.write_text(GLOBALS_MODULE)
    return path


def test_a_module_loaded_from_a_path_stays_alive_for_the_run(globals_module):
    rc, t, _ = one("--python", globals_module, "scale_v1", *SCALE, "--runs", "2")
    assert rc == 0 and t["status"] == "equal" and t["equal"] == 2, t
    rc, t, _ = one("--python", f"{globals_module}:KERNEL", *SCALE, "--runs", "2")
    assert rc == 0 and t["status"] == "equal" and t["target"] == "KERNEL", t


@pytest.mark.parametrize("init, says", [
    ("exits", "exited with status 0 while loading the kernel (in --init"),
    ("raises", "--init: raises() raised ValueError: no licence file"),
    ("hangs", "timed out after 2 s while loading the kernel (in --init"),
])
def test_an_init_that_exits_raises_or_hangs_is_an_error_never_a_pass(globals_module, init,
                                                                     says):
    p = conform("--python", globals_module, "scale_v1", "--init", init, *SCALE,
                "--timeout", "2", "--json", timeout=120)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert says in p.stdout + p.stderr, (p.stdout, p.stderr)


def test_an_init_that_runs_runs_in_the_children(globals_module):
    rc, t, _ = one("--python", globals_module, "scale_v1", "--init", "fine", *SCALE)
    assert rc == 0 and t["status"] == "equal", t


def test_a_registrations_that_is_not_a_mapping_is_refused(globals_module):
    p = conform("--python", f"{globals_module}:not_a_mapping", *SCALE)
    assert p.returncode == 2 and "not_a_mapping gave int; expected a mapping" in p.stderr, \
        p.stderr


def test_python_lines_in_a_manifest(globals_module, tmp_path):
    manifest = tmp_path / "kernels.manifest"
    manifest.write_text(
        f"# a kernel from a module, one from a library, and one through XLA\n"
        f"--python {globals_module.name} scale_v1 {' '.join(SCALE[:3])} '{SCALE[3]}'\n"
        f"{CORPUS} split_v1 --api 1 --signature '(f64[16]) -> (f64[16], s32[16])'\n"
        f"--python {globals_module.name} scale_v1 --reference xla --api 1 "
        f"--signature '(f32[4]) -> f32[4]'\n"
        f"--python {globals_module.name} scale_v1 --init raises --api 1 "
        f"--signature '(f32[4]) -> f32[4]'\n"
        f"--python {globals_module.name}:not_a_mapping --api 1 --signature '(f32[4]) -> f32[4]'\n")
    p = conform("--manifest", manifest, "--json")
    assert p.stdout, p.stderr
    report = json.loads(p.stdout)
    got = [(t["target"], t["status"]) for t in report["targets"]]
    assert got == [("scale_v1", "equal"), ("split_v1", "equal"), ("scale_v1", "equal"),
                   ("scale_v1", "error"), ("not_a_mapping", "error")], report
    assert report["reference"] == "per target"
    refs = [t["reference"] for t in report["targets"]]
    assert "XLA's legacy custom-call path" in refs[2] and "invoker" in refs[0], refs
    assert "--init: raises() raised ValueError" in report["targets"][3]["detail"]
    assert "not_a_mapping gave int" in report["targets"][4]["detail"]
    assert p.returncode == 1


# --- Issue 42: a legacy build the running JAX no longer imports, with its token ----

# As mpi4jax 0.8.1.post2 is to the newest JAX: its package imports a name
# JAX removed (jax.core.get_aval, 0.10.0), and its kernels take a token as
# the last operand and return one as the last result.
LEGACY_BUILD = """
import ctypes

from jax.core import get_aval  # noqa: F401 - removed in JAX 0.10.0

V2 = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)
F32 = ctypes.POINTER(ctypes.c_float)


def _double(out, ins, status):
    table = ctypes.cast(out, ctypes.POINTER(ctypes.c_void_p))
    src, dst = ctypes.cast(ins[0], F32), ctypes.cast(table[0], F32)
    for i in range(4):
        dst[i] = 2 * src[i]


custom_call_targets = {"double_v2": V2(_double)}
"""
TOKEN = ("--api", "2", "--signature", "(f32[4], token[]) -> (f32[4], token[])",
         "--reference", "xla", "--runs", "1")


@pytest.fixture
def legacy_build(tmp_path):
    (tmp_path / "legacy_build.py").write_text(LEGACY_BUILD)
    return tmp_path


def test_a_legacy_build_imports_with_the_names_zero_change_mode_restores(legacy_build):
    kernel = ("--python", "legacy_build:custom_call_targets", "double_v2")
    rc, t, _ = one(*kernel, *TOKEN)  # not on the path
    assert rc == 2 and "cannot import legacy_build: No module named" in t["detail"], t
    rc, t, _ = one(*kernel, "--python-path", legacy_build, *TOKEN)
    assert rc == 2 and "get_aval" in t["detail"], t
    rc, t, ref = one(*kernel, "--python-path", legacy_build, "--restore-jax", *TOKEN)
    assert rc == 0 and t["status"] == "equal" and t["equal"] == 1, t
    assert "XLA's legacy custom-call path" in ref, ref


def test_a_token_xla_cannot_be_given_is_refused_with_the_reason(legacy_build):
    rc, t, _ = one("--python", "legacy_build:custom_call_targets", "double_v2", "--python-path",
                   legacy_build, "--restore-jax", "--api", "2", "--signature",
                   "(token[], f32[4]) -> (f32[4], token[])", "--reference", "xla")
    assert rc == 2 and "a token other than one last operand and one last result" in \
        t["detail"], t


# A kernel that finds its state by an address in its first operand, as
# jaxbind 1.2.1's finds the Python function it calls (id(f)) and tfc's its
# basis object: each side's process has its own, so --arg-from sets it there.
BY_ADDRESS = """
import ctypes
import struct

SCALE = ctypes.c_float(3.0)
V1 = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
F32 = ctypes.POINTER(ctypes.c_float)


def _scaled(out, ins):
    scale = ctypes.cast(ctypes.cast(ins[0], ctypes.POINTER(ctypes.c_uint64))[0], F32)[0]
    src, dst = ctypes.cast(ins[1], F32), ctypes.cast(out, F32)
    for i in range(4):
        dst[i] = scale * src[i]


def scale_address():
    return struct.pack("<Q", ctypes.addressof(SCALE))


def four_bytes():
    return b"1234"


registrations = {"scaled_v1": V1(_scaled)}
"""
ADDRESSED = ("--api", "1", "--signature", "(u64[], f32[4]) -> f32[4]", "--runs", "2")


@pytest.mark.parametrize("reference", ["invoker", "xla"])
def test_an_argument_only_each_sides_process_has(tmp_path, reference):
    module = tmp_path / "by_address.py"
    module.write_text(BY_ADDRESS)
    kernel = ("--python", module, "scaled_v1", *ADDRESSED, "--reference", reference)
    rc, t, _ = one(*kernel, "--arg-from", "0=scale_address")
    assert rc == 0 and t["status"] == "equal" and t["equal"] == 2, t
    if reference == "xla":
        return  # what it refuses, it refuses in the side's own Python, either reference
    rc, t, _ = one(*kernel, "--arg-from", "0=four_bytes")
    assert rc == 2 and "four_bytes() gave 4 bytes; argument 0 has 8" in t["detail"], t
    rc, t, _ = one(*kernel, "--arg-from", "0=nothing_here")
    assert rc == 2 and "has no function 'nothing_here'" in t["detail"], t
    rc, t, _ = one(*kernel, "--arg-from", "7=scale_address")
    assert rc == 2 and "the kernel has 2 arguments" in t["detail"], t


@pytest.mark.parametrize("args, expected", [
    (["--arg-from", "0=f"], "--arg-from goes with --python"),
    (["--arg-from", "0"], "expected I=FUNC"),
    (["--arg-from", "0=f", "--arg-from", "0=g"], "argument 0 is given twice"),
    (["--python", "m:registrations", "k", "--arg-from", "0=f", "--arg-hex", "0=00"],
     "argument 0 is given by both --arg-hex and --arg-from"),
])
def test_bad_arg_from_is_one_line_and_exit_2(args, expected):
    p = conform(*([] if "--python" in args else [CORPUS, "split_v1"]), *args, "--api", "1",
                "--signature", "(f32[4]) -> f32[4]")
    assert p.returncode == 2 and expected in p.stderr, (p.returncode, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
