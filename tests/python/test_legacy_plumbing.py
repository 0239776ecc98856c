"""The custom-call plumbing JAX removed, restored by ccshim.legacy while
zero-change mode is on (ccshim/legacy/_restored.py), and the two ways to run
a program with the mode on and nothing of it edited: `ccshim legacy -- CMD`
and `python -m ccshim.legacy` (issue 28, points 1, 2 and 4).  Each program
runs in a process of its own: the mode patches JAX for the whole process."""

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT
from project_suites import report_lines

HERE = ROOT / "tests" / "python"
KERNELS = BUILD / "tests" / "libccshim_pytest_kernels.so"
PROGRAM = HERE / "legacy_mode_program.py"


def _python(code, env_extra=None, args=()):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python"), **(env_extra or {})}
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                       env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


RESTORED_CHECK = r"""
import json, sys, importlib
import ccshim.legacy as cl
from ccshim.legacy import _restored
import jax, jax.core, jax.lax, jax.numpy as jnp
from jax.extend import core as extend_core
from jax._src.interpreters import mlir as mlir_src
from jax.interpreters import ad, batching, mlir
from jax.lib import xla_client
from jaxlib.hlo_helpers import custom_call
report = {"installed": _restored.installed(), "maps": {
    "jax.core.Primitive": issubclass(jax.core.Primitive, extend_core.Primitive),
    "jax.core.get_aval": jax.core.get_aval is jax.typeof,
    "jax.abstract_arrays.ShapedArray":
        importlib.import_module("jax.abstract_arrays").ShapedArray is jax.core.ShapedArray,
    "jax.core.raise_to_shaped": jax.core.raise_to_shaped(jax.typeof(jnp.ones(2))) ==
        jax.typeof(jnp.ones(2)),
    "jaxlib.hlo_helpers.custom_call": custom_call is mlir_src.custom_call,
    "jax.interpreters.mlir.custom_call": mlir.custom_call is mlir_src.custom_call,
    "jax.interpreters.batching.moveaxis": batching.moveaxis is jnp.moveaxis,
    "jax.interpreters.batching.not_mapped": batching.not_mapped is None,
    "jax.interpreters.ad.Zero.from_value": (
        str(ad.Zero.from_value(jnp.ones(3)).aval), str(ad.Zero.from_value(jnp.arange(3)).aval)
    ) == ("float32[3]", "float0[3]"),
    "jax.lax.zeros_like_array": bool((jax.lax.zeros_like_array(jnp.ones((2, 3), jnp.int8))
                                      == 0).all()),
}}
# aval_to_ir_type with the aval alone, inside a lowering (as celerite2 calls it)
from jax._src.lib.mlir import ir
with ir.Context() as ctx, ir.Location.unknown():
    mlir.register_dialects(ctx) if hasattr(mlir, "register_dialects") else None
    t = mlir.aval_to_ir_type(jax.core.ShapedArray((2, 3), jnp.float32))
    report["aval_to_ir_type"] = str(t)
# a JVP rule giving None for an output's tangent (exoplanet-core's, celerite2's)
from jax.extend.core import Primitive
pair = Primitive("value_and_slope")
pair.multiple_results = True
pair.def_impl(lambda x: (jnp.sin(x), jnp.cos(x)))
pair.def_abstract_eval(lambda x: (x, x))
def pair_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    value, slope = pair.bind(x)
    return (value, slope), (slope * dx, None)
ad.primitive_jvps[pair] = pair_jvp
x = jnp.linspace(0.0, 1.0, 4)
out, tangent = jax.jvp(lambda x: pair.bind(x)[0], (x,), (jnp.ones(4),))
report["none_tangent_unused"] = bool(jnp.allclose(tangent, jnp.cos(x)))
try:  # that output used in forward mode: an error as in JAX 0.4, never zeros
    jax.jvp(lambda x: pair.bind(x)[1] * 2.0, (x,), (jnp.ones(4),))
    report["none_tangent_used"] = "no error"
except Exception as e:
    report["none_tangent_used"] = type(e).__name__
# a legacy registration through the restored xla_client is recorded, not
# given to XLA; a typed one passes through to JAX
xla_client.register_custom_call_target(b"old_style", object(), platform="cpu")
report["recorded"] = [list(k) for k in cl.recorded()]
errors = {}
try:  # an XlaBuilder operation translation rules never used
    xla_client.ops.Sort
except AttributeError as e:
    errors["ops"] = str(e)
try:
    from jaxlib.hlo_helpers import hlo_const
except ImportError as e:
    errors["hlo_const"] = str(e)
try:
    import jaxlib.hlo_helpers as h; h.hlo_const
except AttributeError as e:
    errors["hlo_helpers.hlo_const"] = str(e)
report["errors"] = errors
# what extensions' own tests wrap their calls in (jax-finufft 0.1.0's)
import jax.experimental
with jax.experimental.enable_x64():
    report["enable_x64"] = str(jnp.ones(1).dtype)
    with jax.experimental.disable_x64():
        report["disable_x64"] = str(jnp.ones(1).dtype)
# ir_constant of a Python scalar in a lowering rule, as JAX to 0.7.1 made it
# (an element count, an object's id()): of its Python type's dtype
with mlir.make_ir_context(), ir.Location.unknown():
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        report["ir_constant"] = [str(mlir.ir_constant(v).type) for v in
                                 (12, 2**40, 0.5, True, 1j)]
        report["ir_constants"] = [str(c.type) for c in mlir.ir_constants(7)]
# a NumPy-array parameter of a primitive made through jax.core.Primitive (JAX
# 0.7 wants parameters hashable): the rules get the same values
shaped = jax.core.Primitive("shaped_like")
seen = []
def shaped_abstract(x, *, shape):
    seen.append((type(shape).__mro__[1].__name__, tuple(int(s) for s in shape),
                 hash(shape) == hash(shape.copy()), shape == np.array(shape)))
    return jax.core.ShapedArray(tuple(shape), x.dtype)
shaped.def_abstract_eval(shaped_abstract)
mlir.register_lowering(shaped, mlir.lower_fun(
    lambda x, *, shape: jnp.broadcast_to(x, tuple(int(s) for s in shape)),
    multiple_results=False))
import numpy as np
out = jax.jit(lambda x: shaped.bind(x, shape=np.array([2, 3])))(jnp.float32(1.5))
report["ndarray_param"] = {"shape": list(out.shape), "seen": seen[0]}
cl.disable()
report["after_disable"] = {"installed": _restored.installed(),
                           "jax.lib.xla_client": "jax.lib.xla_client" in sys.modules,
                           "jax.abstract_arrays": "jax.abstract_arrays" in sys.modules,
                           "jax.core.Primitive": hasattr(jax.core, "Primitive"),
                           "ad.Zero.from_value": hasattr(ad.Zero, "from_value"),
                           "maybe_jvp_tracer": not hasattr(
                               importlib.import_module("jax._src.interpreters.ad")
                               .maybe_jvp_tracer, "__wrapped__")}
print(json.dumps(report))
"""


def test_each_restored_name_maps_onto_the_running_jax_and_is_taken_back():
    import jax
    r = _python(RESTORED_CHECK, {"CCSHIM_LEGACY": "strict"})
    assert all(r["maps"].values()), r["maps"]
    assert r["aval_to_ir_type"] == "tensor<2x3xf32>"
    assert r["none_tangent_unused"] is True
    assert r["none_tangent_used"] == "TypeError", r["none_tangent_used"]
    assert ["host", "old_style"] in r["recorded"]
    e = r["errors"]
    assert "xla_client.ops.Sort is not emulated" in e["ops"] and \
        "CustomCallWithLayout" in e["ops"], e["ops"]
    assert "cannot import name 'hlo_const'" in e["hlo_const"]
    assert "jaxlib.hlo_helpers was removed in JAX 0.8.0; ccshim.legacy restores only " \
           "its custom-call plumbing (custom_call), not hlo_const" in e["hlo_helpers.hlo_const"]
    assert (r["enable_x64"], r["disable_x64"]) == ("float64", "float32")
    assert r["ir_constant"] == ["tensor<i64>", "tensor<i64>", "tensor<f64>", "tensor<i1>",
                                "tensor<complex<f64>>"], r["ir_constant"]
    assert r["ir_constants"] == ["tensor<i64>"]
    assert r["ndarray_param"] == {"shape": [2, 3], "seen": ["ndarray", [2, 3], True, True]}
    # What the running JAX lacks was put back; and taken back by disable().
    if tuple(map(int, jax.__version__.split(".")[:2])) >= (0, 10):
        for name in ("jax.experimental.enable_x64", "jax.interpreters.mlir.ir_constant",
                     "jax.lib.xla_client", "jaxlib.hlo_helpers", "jax.core.Primitive",
                     "jax.abstract_arrays", "jax.core.raise_to_shaped",
                     "jax.core.get_aval", "jax.lax.zeros_like_array",
                     "jax.interpreters.mlir.custom_call"):
            assert name in r["installed"], name
    assert r["after_disable"] == {"installed": [], "jax.lib.xla_client": False,
                                  "jax.abstract_arrays": False,
                                  "jax.core.Primitive": False, "ad.Zero.from_value": False,
                                  "maybe_jvp_tracer": True}


IR_CONSTANT_RULE = r"""
import json, sys
import ccshim, ccshim.legacy as cl
import jax, jax.core, numpy as np
from jax.interpreters import mlir
from jaxlib.hlo_helpers import custom_call
lib = ccshim.load_legacy_library(sys.argv[1])
jax.ffi.register_ffi_target("ext_count_sum", jax.ffi.pycapsule(lib.count_sum_v1), platform="cpu",
                            api_version=0)
count_sum = jax.core.Primitive("count_sum")
count_sum.def_abstract_eval(lambda x: jax.core.ShapedArray((), x.dtype))

def lower(ctx, x):
    # the element count as a Python int, as extensions of JAX 0.4 passed it
    n = mlir.ir_constant(int(np.prod(ctx.avals_in[0].shape)))
    return custom_call("ext_count_sum", result_types=[mlir.aval_to_ir_type(ctx.avals_out[0])],
                       operands=[n, x], api_version=1).results

mlir.register_lowering(count_sum, lower, platform="cpu")
x = np.arange(1, 101, dtype=np.float32)
print(json.dumps({"sum": float(jax.jit(count_sum.bind)(x)), "wrapped": cl.wrapped()}))
"""


def test_a_lowering_rule_passing_ir_constant_a_python_int_runs():
    """An extension's lowering rule that makes its element count an operand
    with mlir.ir_constant(n), n a Python int (as the JAX of its time took
    it, an int64 constant; JAX 0.7.2 on asserts unless given the aval),
    runs in strict zero-change mode: the kernel reads the count as s64."""
    r = _python(IR_CONSTANT_RULE, {"CCSHIM_LEGACY": "strict"}, args=[str(KERNELS)])
    assert r == {"sum": 5050.0, "wrapped": [["host", "ccshim.v1.ext_count_sum"]]}, r


TPU_REGISTRATION = r"""
import ctypes, json
import ccshim.legacy as cl
import jax
capsule = jax.ffi.pycapsule(ctypes.CDLL(None).abs)
for platform in ("cpu", "tpu"):  # as Enzyme-JAX registers jaxzyme.aug
    jax.ffi.register_ffi_target("ext_aug", capsule, platform=platform, api_version=0)
print(json.dumps({"recorded": sorted(map(list, cl.recorded()))}))
"""


def test_a_legacy_registration_for_a_platform_ccshim_does_not_run_passes_to_jax():
    """A legacy registration for TPU beside CPU (Enzyme-JAX 0.0.16's
    jaxzyme.aug): the CPU one recorded, the TPU one handed to JAX as without
    zero-change mode, not refused."""
    r = _python(TPU_REGISTRATION, {"CCSHIM_LEGACY": "strict"})
    assert r == {"recorded": [["host", "ext_aug"]]}, r


TRANSLATION_RULES = r"""
import json, sys
import ccshim.legacy as cl
import jax, jax.core, numpy as np
from jax.interpreters import xla
from jax._src.interpreters.xla import _backend_specific_translations
from jaxlib import xla_client
import ccshim
lib = ccshim.load_legacy_library(sys.argv[1])
for name in ("sumdiff_v2", "count_sum_v1"):
    xla_client.register_custom_call_target(f"xb_{name}".encode(),
                                           jax.ffi.pycapsule(getattr(lib, name)))

# planet-harmonica's way: an old-style rule in the public registry, two
# results as one tuple shape, its layouts given, API version 2
sumdiff = jax.core.Primitive("xb_sumdiff")
sumdiff.multiple_results = True
sumdiff.def_abstract_eval(lambda a, b: (a, a))
def sumdiff_rule(c, a, b):
    shape = c.get_shape(a)
    array = xla_client.Shape.array_shape(shape.element_type(), shape.dimensions(), (0,))
    return xla_client.ops.CustomCallWithLayout(
        c, b"xb_sumdiff_v2", operands=(a, b), operand_shapes_with_layout=(array, array),
        shape_with_layout=xla_client.Shape.tuple_shape((array, array)),
        api_version=xla_client.ops.CustomCallApiVersion.API_VERSION_STATUS_RETURNING)
xla.backend_specific_translations["cpu"][sumdiff] = sumdiff_rule

# klujax's way: a rule of JAX 0.4.14-0.4.34's signature in the private
# registry, a reshape, and its count a constant literal (int64), API version 1
count_sum = jax.core.Primitive("xb_count_sum")
count_sum.def_abstract_eval(lambda x: jax.core.ShapedArray((), x.dtype))
def count_sum_rule(ctx, avals_in, avals_out, x):
    c = ctx.builder
    (rows, cols) = c.get_shape(x).dimensions()
    flat = xla_client.ops.Reshape(x, (rows * cols,))
    n = xla_client.ops.ConstantLiteral(c, rows * cols)
    return [xla_client.ops.CustomCallWithLayout(
        c, b"xb_count_sum_v1", operands=(n, flat),
        operand_shapes_with_layout=(xla_client.Shape.array_shape(np.dtype(np.int64), (), ()),
                                    c.get_shape(flat)),
        shape_with_layout=xla_client.Shape.array_shape(np.dtype(np.float32), (), ()))]
_backend_specific_translations["cpu"][count_sum] = count_sum_rule

a = np.linspace(-1, 1, 64, dtype=np.float32)
b = np.cos(a)
s, d = jax.jit(sumdiff.bind)(a, b)
x = np.arange(12, dtype=np.float32).reshape(3, 4)
print(json.dumps({"sum": bool((np.asarray(s) == a + b).all()),
                  "diff": bool((np.asarray(d) == a - b).all()),
                  "count_sum": float(jax.jit(count_sum.bind)(x)), "wrapped": cl.wrapped()}))
"""


def test_xlabuilder_translation_rules_run_as_lowerings():
    """Translation rules as planet-harmonica 0.1.1 (public registry, old
    signature, a tuple result) and klujax 0.2.10 (JAX 0.4.14-0.4.34's private
    registry and signature, a reshape and a constant literal) wrote them run
    in strict zero-change mode, through ccshim, with the kernels' results."""
    r = _python(TRANSLATION_RULES, {"CCSHIM_LEGACY": "strict"}, args=[str(KERNELS)])
    assert r == {"sum": True, "diff": True, "count_sum": 66.0,
                 "wrapped": [["host", "ccshim.v1.xb_count_sum_v1"],
                             ["host", "ccshim.v2.xb_sumdiff_v2"]]}, r


def test_the_docs_table_is_the_restored_list():
    from ccshim.legacy import _restored
    doc = (ROOT / "docs" / "legacy.md").read_text()
    rows = re.findall(r"^\| `([^`]+)` \| ([^|]+) \| ([^|]+) \|$", doc, re.M)
    table = {name: (removed.strip(), what.strip()) for name, removed, what in rows}
    for entry in _restored.RESTORED:
        assert table.get(entry.name) == (entry.removed, entry.now), entry.name
    for entry in _restored.NOT_RESTORED:
        assert table.get(entry.name) == (entry.removed, "not restored: " + entry.why), \
            entry.name
    assert len(table) == len(_restored.RESTORED) + len(_restored.NOT_RESTORED)


def _run(cmd, env_extra=None):
    env = {**os.environ, "CCSHIM_PYTHON": sys.executable, **(env_extra or {})}
    env.pop("CCSHIM_LEGACY", None)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


STRICT_TARGETS = {"v1 via ffi_call": ["ccshim.v1.ext_scale_v1"],
                  "v2 via mlir.custom_call": ["ccshim.v2.ext_scale_v2"],
                  "v3 with a descriptor": ["ccshim.v3.ext_scale_v3"]}


@pytest.mark.parametrize("how", ["ccshim legacy --", "python -m ccshim.legacy"])
def test_a_program_runs_in_zero_change_mode_with_nothing_of_it_edited(how):
    """legacy_mode_program.py's "xla" mode imports no ccshim.legacy: run as
    it is, it gives XLA its legacy calls; run by either runner, the same
    bytes from ccshim's typed targets only, strict."""
    path = {"PYTHONPATH": str(ROOT / "python")}
    xla = _run([sys.executable, str(PROGRAM), "xla", str(KERNELS)], path)
    prefix = ([str(BUILD / "tools" / "ccshim"), "legacy", "--strict", "--", sys.executable]
              if how.startswith("ccshim") else [sys.executable, "-m", "ccshim.legacy",
                                                "--strict"])
    got = _run([*prefix, str(PROGRAM), "xla", str(KERNELS)], path)
    assert got["outputs"] == xla["outputs"]
    assert xla["targets"]["v2 via mlir.custom_call"] == ["ext_scale_v2"]
    assert got["targets"] == STRICT_TARGETS


def _strict_runner(how: str, report) -> list[str]:
    """The command line before a Python's arguments, for a run in strict
    mode with --report REPORT, as `how` says: the command or the module."""
    if how == "ccshim legacy":
        return [str(BUILD / "tools" / "ccshim"), "legacy", "--strict", "--report", str(report),
                "--", sys.executable]
    return [sys.executable, "-m", "ccshim.legacy", "--strict", f"--report={report}"]


@pytest.mark.parametrize("how", ["ccshim legacy", "python -m ccshim.legacy"])
def test_the_runner_reaches_the_pythons_a_program_starts_and_reports_them(how, tmp_path):
    """A program's own subprocesses (pytest's, MPI ranks) run in the mode
    too: the boot folder is on PYTHONPATH and CCSHIM_LEGACY is set.  With
    --report, each adds a line per typed target it registers."""
    code = ("import subprocess, sys; sys.exit(subprocess.call([sys.executable, "
            f"{str(PROGRAM)!r}, 'xla', {str(KERNELS)!r}]) or subprocess.call([sys.executable, "
            f"{str(PROGRAM)!r}, 'xla', {str(KERNELS)!r}]))")
    report = tmp_path / "report.tsv"
    prefix = _strict_runner(how, report)
    got = _run([*prefix, "-c", code], {"PYTHONPATH": str(ROOT / "python")})
    assert got["targets"] == STRICT_TARGETS
    lines = report_lines(report)
    assert len({line["pid"] for line in lines}) == 2  # both children, none of the parent
    assert sorted((line["typed"], line["target"], line["api_version"]) for line in lines) == \
        sorted([(f"ccshim.v{v}.ext_scale_v{v}", f"ext_scale_v{v}", str(v)) for v in (1, 2, 3)] * 2)
    assert {line["platform"] for line in lines} == {"host"}


@pytest.mark.parametrize("how", ["ccshim legacy", "python -m ccshim.legacy"])
def test_a_child_with_nothing_but_pythonpath_keeps_this_ccshim_and_its_library(how, tmp_path):
    """A child started with an environment of only PYTHONPATH (as mpi4jax's
    tests start theirs), of a ccshim whose library is in a folder of its
    own (CCSHIM_LIBRARY, as a build elsewhere needs): it imports the same
    ccshim, loads the same library, is strict and reports, all from what
    PYTHONPATH carries."""
    import shutil
    site, own = tmp_path / "site", tmp_path / "own"
    shutil.copytree(ROOT / "python" / "ccshim", site / "ccshim",
                    ignore=shutil.ignore_patterns("__pycache__", "lib"))
    own.mkdir()
    library = own / "libccshim.so"
    shutil.copy(BUILD / "libccshim.so", library)
    child = ("import json, runpy, sys\n"
             f"sys.argv = [{str(PROGRAM)!r}, 'xla', {str(KERNELS)!r}]\n"
             f"runpy.run_path({str(PROGRAM)!r}, run_name='__main__')\n"
             "import ccshim, ccshim._native\n"
             "print(json.dumps({'library': ccshim._native.library_path(), "
             "'package': ccshim.__file__}))\n")
    parent = ("import os, subprocess, sys\n"
              f"sys.exit(subprocess.call([sys.executable, '-c', {child!r}], "
              "env={'PYTHONPATH': os.environ['PYTHONPATH']}))\n")
    report = tmp_path / "report.tsv"
    prefix = _strict_runner(how, report)
    env = {**os.environ, "CCSHIM_PYTHON": sys.executable, "CCSHIM_LIBRARY": str(library),
           "PYTHONPATH": str(site)}
    env.pop("CCSHIM_LEGACY", None)
    p = subprocess.run([*prefix, "-c", parent], capture_output=True, text=True, env=env,
                       timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    ran, where = (json.loads(line) for line in p.stdout.strip().splitlines()[-2:])
    assert ran["targets"] == STRICT_TARGETS
    assert where == {"library": str(library), "package": str(site / "ccshim" / "__init__.py")}
    lines = report_lines(report)
    assert sorted(line["typed"] for line in lines) == sorted(
        t for targets in STRICT_TARGETS.values() for t in targets)


@pytest.mark.parametrize("how", ["ccshim legacy", "python -m ccshim.legacy"])
def test_a_child_with_nothing_but_pythonpath_keeps_the_library_its_parent_preloaded(
        how, tmp_path):
    """The parent's command preloads one library (as make test-gpu preloads
    mpich's libmpi.so.12); its child, started with nothing but PYTHONPATH,
    then loads another that defines the same symbol into the global scope
    (as Open MPI's libmpi.so.40 came to be mapped on the GPU machine).  The
    symbol must still be the preloaded library's in the child, as it is in
    the parent: the child keeps the MPI its parent chose."""
    import shutil
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the two libraries")
    libs = {}
    for name, value in (("chosen", 1), ("other", 2)):
        src = tmp_path / f"{name}.c"
        src.write_text(f"int ccshim_test_which_mpi(void) {{ return {value}; }}\n")
        libs[name] = tmp_path / f"lib{name}.so"
        subprocess.run([cc, "-shared", "-fPIC", "-o", str(libs[name]), str(src)], check=True)
    which = ("import ctypes\n"
             f"ctypes.CDLL({str(libs['other'])!r}, mode=ctypes.RTLD_GLOBAL)\n"
             "print(ctypes.CDLL(None).ccshim_test_which_mpi())\n")
    parent = (f"{which}import os, subprocess, sys\n"
              f"sys.exit(subprocess.call([sys.executable, '-c', {which!r}], "
              "env={'PYTHONPATH': os.environ['PYTHONPATH']}))\n")
    env = {**os.environ, "CCSHIM_PYTHON": sys.executable, "PYTHONPATH": str(ROOT / "python"),
           "LD_PRELOAD": str(libs["chosen"])}
    env.pop("CCSHIM_LEGACY", None)
    prefix = _strict_runner(how, tmp_path / "report.tsv")
    p = subprocess.run([*prefix, "-c", parent], capture_output=True, text=True, env=env,
                       timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split() == ["1", "1"], (p.stdout, p.stderr[-2000:])


def test_a_carried_preload_that_cannot_load_is_said_and_passed_over(tmp_path):
    """ld.so says a preload it cannot load and goes on: so does the child."""
    from ccshim import _carried
    path = _carried.entries({"preload": f"{tmp_path / 'missing.so'} "})
    assert _carried.load_preload(path, environ={}) == []
    assert _carried.load_preload(path, environ={"LD_PRELOAD": "x.so"}) == []  # kept: ld.so did it
    assert _carried.preload_list("a.so:b.so  c.so") == ["a.so", "b.so", "c.so"]
    # a sanitizer's runtime is passed over: loaded late it would abort the child
    asan = _carried.entries({"preload": "/usr/lib/x86_64-linux-gnu/libasan.so.8"})
    assert _carried.load_preload(asan, environ={}) == []


def test_the_runner_refuses_what_it_cannot_run():
    ccshim = str(BUILD / "tools" / "ccshim")
    env = {**os.environ, "CCSHIM_PYTHON": sys.executable}
    for cmd, want, code in (
            ([ccshim, "legacy"], "ccshim legacy: no command given", 2),
            ([ccshim, "legacy", "--bogus", "--", "true"], "unknown option '--bogus'", 2),
            ([ccshim, "legacy", "--report"], "--report needs a file", 2),
            ([ccshim, "legacy", "--report=", "--", "true"], "--report needs a file", 2),
            ([ccshim, "legacy", "--", "/nonexistent/python"],
             "cannot run '/nonexistent/python'", 127),
            ([sys.executable, "-m", "ccshim.legacy", "-m"], "-m needs an argument", 2)):
        env["PYTHONPATH"] = str(ROOT / "python")
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        assert p.returncode == code and want in p.stderr, (cmd, p.returncode, p.stderr)


CPU_REGISTRATION = r"""
import json, sys
import ccshim, ccshim.legacy as cl
import jax, jax.core, numpy as np
from jax.interpreters import mlir
from jaxlib.hlo_helpers import custom_call
lib = ccshim.load_legacy_library(sys.argv[1])

# jaxlib 0.1.x-0.4.x's per-platform spelling, on both modules extensions
# imported it from:
#   from jaxlib import xla_client          (danieljtait/jax_xla_adventures,
#   xla_client.register_cpu_custom_call_target(name, fn)  initial_custom_call/test.py)
#   from jax.lib import xla_client         (dfm/extending-jax, src/kepler_jax/kepler_jax.py;
#   for _name, _value in cpu_ops.registrations().items():   exoplanet-dev/celerite2,
#       xla_client.register_cpu_custom_call_target(_name, _value)  python/celerite2/jax/ops.py)
from jaxlib import xla_client as jaxlib_client
from jax.lib import xla_client
jaxlib_client.register_cpu_custom_call_target(b"cpu_count_sum_a",
                                              jax.ffi.pycapsule(lib.count_sum_v1))
xla_client.register_cpu_custom_call_target(b"cpu_count_sum_b", jax.ffi.pycapsule(lib.count_sum_v1))

def primitive(target):
    p = jax.core.Primitive(target)
    p.def_abstract_eval(lambda x: jax.core.ShapedArray((), x.dtype))
    def lower(ctx, x):
        n = mlir.ir_constant(int(np.prod(ctx.avals_in[0].shape)))
        return custom_call(target, result_types=[mlir.aval_to_ir_type(ctx.avals_out[0])],
                           operands=[n, x], api_version=1).results
    mlir.register_lowering(p, lower, platform="cpu")
    return p

x = np.arange(1, 101, dtype=np.float32)
sums = [float(jax.jit(primitive(t).bind)(x)) for t in ("cpu_count_sum_a", "cpu_count_sum_b")]
report = {"sums": sums, "recorded": sorted(map(list, cl.recorded())), "wrapped": cl.wrapped()}
cl.disable()
report["after_disable"] = [hasattr(jaxlib_client, "register_cpu_custom_call_target"),
                           "jax.lib.xla_client" in sys.modules]
print(json.dumps(report))
"""


def test_register_cpu_custom_call_target_records_a_legacy_cpu_kernel():
    """xla_client.register_cpu_custom_call_target(name, fn), jaxlib's alias
    of register_custom_call_target(name, fn, platform="cpu") until the 0.4
    series, on jaxlib.xla_client and jax.lib.xla_client as extensions of
    those years called it: each kernel recorded and run through ccshim in
    strict zero-change mode; disable() takes the spelling back."""
    r = _python(CPU_REGISTRATION, {"CCSHIM_LEGACY": "strict"}, args=[str(KERNELS)])
    assert r["sums"] == [5050.0, 5050.0], r
    assert ["host", "cpu_count_sum_a"] in r["recorded"] and \
        ["host", "cpu_count_sum_b"] in r["recorded"], r["recorded"]
    assert r["wrapped"] == [["host", "ccshim.v1.cpu_count_sum_a"],
                            ["host", "ccshim.v1.cpu_count_sum_b"]], r["wrapped"]
    assert r["after_disable"] == [False, False], r["after_disable"]


CONFIG_MODULE = r"""
import importlib.util, json, sys
import jax, jax.numpy as jnp
had_module = importlib.util.find_spec("jax.config") is not None
import ccshim.legacy as cl
# what test suites of JAX 0.2-0.4 put at their top, as JAX's own
# docs/debugging/flags.md (jax-ml/jax, 0.3-0.4) told them to; the custom-call
# tutorial's own suite (dfm/extending-jax, tests/test_kepler_jax.py):
#   from jax.config import config
#   config.update("jax_enable_x64", True)
from jax.config import config
config.update("jax_enable_x64", True)
report = {"same_object": config is jax.config, "x64": str(jnp.ones(1).dtype),
          "read": config.read("jax_enable_x64"),
          "package_attribute": type(jax.config).__name__}
import jax.config  # the statement form: jax.config stays JAX's object
report["after_import_statement"] = type(jax.config).__name__
config.update("jax_enable_x64", False)
try:
    sys.modules["jax.config"].FLAGS
except AttributeError as e:
    report["other_name"] = str(e)
cl.disable()
report["after_disable"] = ["jax.config" in sys.modules, type(jax.config).__name__]
report["had_module"] = had_module
try:
    from jax.config import config
    report["import_after_disable"] = "imported"
except ImportError as e:
    report["import_after_disable"] = type(e).__name__
print(json.dumps(report))
"""


def test_from_jax_config_import_config_is_jax_configuration_object():
    """`from jax.config import config` (the module jax.config, removed in
    the 0.4 series), as test suites of those years begin: the restored
    module's config is jax.config itself; jax.config stays JAX's object;
    any other name of the module is an error naming what is restored;
    disable() takes the module back."""
    r = _python(CONFIG_MODULE, {"CCSHIM_LEGACY": "strict"})
    assert r["same_object"] is True and r["x64"] == "float64" and r["read"] is True, r
    assert r["package_attribute"] == r["after_import_statement"] == "Config", r
    assert "restores only its config" in r["other_name"], r["other_name"]
    assert r["had_module"] is False  # the JAX of ccshim's test environments
    assert r["after_disable"] == [False, "Config"], r["after_disable"]
    assert r["import_after_disable"] == "ModuleNotFoundError"


EXTEND_FFI = r"""
import json, sys
import ccshim, ccshim.legacy as cl
import jax, jax.core, numpy as np
from jax.interpreters import mlir
from jaxlib.hlo_helpers import custom_call
import jax.extend.ffi
lib = ccshim.load_legacy_library(sys.argv[1])
# the spelling of JAX 0.4.31 to 0.6.2 (flaport/klujax, klujax.py:
#   jax.extend.ffi.register_ffi_target("_solve_f64", klujax_cpp.solve_f64(), platform="cpu")),
# here for a legacy kernel, api_version=0, as registration helpers of JAX
# 0.4.35-0.4.38 called it
jax.extend.ffi.register_ffi_target("xf_count_sum", jax.extend.ffi.pycapsule(lib.count_sum_v1),
                                   platform="cpu", api_version=0)
p = jax.core.Primitive("xf_count_sum")
p.def_abstract_eval(lambda x: jax.core.ShapedArray((), x.dtype))
def lower(ctx, x):
    n = mlir.ir_constant(int(np.prod(ctx.avals_in[0].shape)))
    return custom_call("xf_count_sum", result_types=[mlir.aval_to_ir_type(ctx.avals_out[0])],
                       operands=[n, x], api_version=1).results
mlir.register_lowering(p, lower, platform="cpu")
report = {"sum": float(jax.jit(p.bind)(np.arange(1, 101, dtype=np.float32))),
          "recorded": sorted(map(list, cl.recorded())), "wrapped": cl.wrapped(),
          "same": [getattr(jax.extend.ffi, n) is getattr(jax.ffi, n)
                   for n in ("pycapsule", "include_dir", "ffi_call", "ffi_lowering")]}
try:
    jax.extend.ffi.register_ffi_type_id
except AttributeError as e:
    report["other_name"] = str(e)
cl.disable()
report["after_disable"] = "jax.extend.ffi" in sys.modules
print(json.dumps(report))
"""


def test_jax_extend_ffi_registers_as_jax_0_5_to_0_6_did():
    """jax.extend.ffi (its names removed in JAX 0.7.0, the module in 0.8.0),
    as JAX 0.5.0-0.6.2 gave it: jax.ffi's functions; a legacy registration
    through it recorded and run through ccshim in strict mode (a typed one
    goes to jax.ffi's, as through jax.ffi itself); disable() takes the
    module back."""
    r = _python(EXTEND_FFI, {"CCSHIM_LEGACY": "strict"}, args=[str(KERNELS)])
    assert r["sum"] == 5050.0, r
    assert ["host", "xf_count_sum"] in r["recorded"], r["recorded"]
    assert r["wrapped"] == [["host", "ccshim.v1.xf_count_sum"]], r["wrapped"]
    assert r["same"] == [True] * 4, r["same"]
    assert "restores only its custom-call plumbing" in r["other_name"], r["other_name"]
    assert r["after_disable"] is False


MLIR_HLO = r"""
import json, sys
import ccshim, ccshim.legacy as cl
import jax, jax.core, numpy as np
from jax.interpreters import mlir
lib = ccshim.load_legacy_library(sys.argv[1])
jax.ffi.register_ffi_target("hlo_count_sum", jax.ffi.pycapsule(lib.count_sum_v1), platform="cpu",
                            api_version=0)
p = jax.core.Primitive("hlo_count_sum")
p.def_abstract_eval(lambda x: jax.core.ShapedArray((), x.dtype))
# the custom call built with the dialect module's op, its API version left
# to the op's default, as jax-ml/jax's own tests/lax_control_flow_test.py
# (jax-v0.4.31 to 0.5.x) lowered theirs:
#   lambda ctx, x: mlir.hlo.CustomCallOp([x.type], [x],
#       call_target_name=mlir.ir.StringAttr.get("...")).results
def lower(ctx, x):
    n = mlir.ir_constant(np.int64(x.type.shape[0]))
    return mlir.hlo.CustomCallOp([mlir.aval_to_ir_type(ctx.avals_out[0])], [n, x],
                                 call_target_name=mlir.ir.StringAttr.get("hlo_count_sum")).results
mlir.register_lowering(p, lower, platform="cpu")
report = {"sum": float(jax.jit(p.bind)(np.arange(1, 101, dtype=np.float32))),
          "wrapped": cl.wrapped()}
cl.disable()
report["after_disable"] = hasattr(mlir, "hlo")
print(json.dumps(report))
"""


def test_a_lowering_rule_building_mlir_hlo_custom_call_op_runs():
    """jax.interpreters.mlir.hlo (removed in JAX 0.6.0), the StableHLO
    dialect module: a lowering rule that builds its legacy custom call with
    mlir.hlo.CustomCallOp (API version left to the op's default, 1) runs
    through ccshim in strict mode; disable() takes the name back."""
    r = _python(MLIR_HLO, {"CCSHIM_LEGACY": "strict"}, args=[str(KERNELS)])
    assert r == {"sum": 5050.0, "wrapped": [["host", "ccshim.v1.hlo_count_sum"]],
                 "after_disable": False}, r
