"""`ccshim port` on XlaBuilder translation rules and setup.py pybind11 builds
(docs/port.md), proven on planet-harmonica 0.1.1 (census).

Its patch and what it refused are the ones kept in dev/census/ports/; git
apply takes it; on the ported tree it prints nothing.  In make
test-projects (a build and its suite take about two minutes): the patched
tree, built by its own setup.py, passes its own suite on the newest JAX in a
Python where ccshim cannot be imported, as it passed on its reference (JAX
0.4.28's legacy path), and every custom call XLA compiled is typed.

A fixture of the form, tests/fixtures/port/rule_ext (a tuple result in
column-major layouts, with int64 and int32 constant operands; a
default-layout call), is ported, built and run in make test's newest suite:
its values are NumPy's, and the bytes zero-change mode gives running the
unported rules through ccshim; the layouts reach XLA.
"""

import json
import os
import pathlib
import re
import shutil
import subprocess

import numpy as np
import pytest

from conftest import BUILD, FIXTURES, ROOT, fixture_missing
import project_ports
import project_suites
from project_modules import cached
from test_port import KEPT, NEWEST, _built_without_ccshim, _git, _port

pytest.importorskip("libcst", reason="ccshim port needs libcst (dev/setup.sh test installs it)")

HARMONICA = "planet-harmonica-0.1.1"
HARMONICA_TARGETS = {"jax_light_curve_quad_ld", "jax_light_curve_nonlinear_ld"}


def _harmonica_tree(tmp_path: pathlib.Path, name="harmonica") -> pathlib.Path:
    """A copy of planet-harmonica's sdist tree, as published."""
    folder, inner, _parts = project_suites.SUITES[HARMONICA]["suite"]
    src = cached(folder)
    if not (src / ".complete").exists():
        fixture_missing(f"{HARMONICA}'s sdist ({folder})")
    dst = tmp_path / name
    shutil.copytree(src / inner, dst)
    return dst


@pytest.mark.once
def test_harmonica_kept_patch_is_what_port_prints_now_and_git_apply_takes_it(tmp_path):
    tree = _harmonica_tree(tmp_path)
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (KEPT / f"{HARMONICA}.patch").read_text(), \
        "dev/census/ports/ is stale: python dev/census/ports.py writes it anew"
    assert done.stderr == (KEPT / f"{HARMONICA}.refused").read_text() == ""
    files = re.findall(r"^diff --git a/(\S+) ", done.stdout, re.M)
    assert files == ["harmonica/bindings.cpp", "harmonica/jax/custom_primitives.py",
                     "harmonica/xla_legacy_call.h", "pyproject.toml", "setup.py"]
    for target in HARMONICA_TARGETS:
        rule = "jax_light_curve_quad_ld_xla_translation" if "quad" in target else \
            "jax_light_curve_nonlinear_xla_translation"
        assert f"+def {rule}(ctx, timesc, *paramssc):" in done.stdout
        assert f'+        "{target}",\n' in done.stdout
        assert f"+    jax_light_curve_{target.split('_')[-2]}_ld_p, {rule}, platform='cpu')" \
            in done.stdout
    assert done.stdout.count("+    return jax.ffi.ffi_lowering(\n") == 2
    assert "+        include_dirs=[\"vendor/eigen\", \"vendor/pybind11\", " \
           "jax_ffi.include_dir()],\n" in done.stdout
    assert "+        cxx_std=17\n" in done.stdout
    # git takes it; the ported tree ports to nothing; --apply writes the same
    patch = tmp_path / "harmonica.patch"
    patch.write_text(done.stdout)
    for args in (("apply", "--check", str(patch)), ("apply", str(patch))):
        ran = _git(*args, cwd=tree)
        assert ran.returncode == 0, ran.stderr
    again = _port(tree)
    assert again.returncode == 0 and again.stdout == "" and again.stderr == "", again.stderr
    ported = (tree / "harmonica/jax/custom_primitives.py").read_text()
    assert "from jaxlib import xla_client" not in ported and "get_shape" not in ported
    assert "xla_client.ops" not in ported and "xla.backend_specific_translations" not in ported
    other = _harmonica_tree(tmp_path, "other")
    assert _port(other, "--apply").returncode == 0
    diff = subprocess.run(["diff", "-r", str(tree), str(other)], capture_output=True, text=True)
    assert diff.returncode == 0, diff.stdout


def _harmonica_buildable(tmp_path: pathlib.Path) -> pathlib.Path:
    """The sdist tree with what its build needs that it does not ship
    (project_ports.harmonica_buildable); skipped, saying which, without it."""
    tree = _harmonica_tree(tmp_path)
    try:
        project_ports.harmonica_buildable(tree)
    except LookupError as e:
        pytest.skip(str(e))
    return tree


# NumPy 2.4 made an error of what harmonica/api.py:178 does (the census's
# manifest, dev/census/projects/planet-harmonica.toml): that test does not
# reach the kernels (tests/test_flux.py), and fails so with or without a port.
NUMPY_24 = ("tests.test_flux.TestFlux::test_api_light_curve_time_dependent",
            "ValueError: setting an array element with a sequence")


@pytest.mark.skipif(not os.environ.get("CCSHIM_TEST_PROJECTS"),
                    reason="make test-projects runs it: the project's build and its suite take "
                           "about two minutes")
@pytest.mark.once  # all it runs runs on .venv-newest's Python
def test_ported_harmonica_builds_and_passes_its_suite_without_ccshim(tmp_path):
    if not NEWEST.exists():
        pytest.skip(f"no {NEWEST} (no Python 3.12 here): the newest JAX is not tested")
    tree = _harmonica_buildable(tmp_path)
    done = _port(tree, "--apply")
    assert done.returncode == 0 and done.stderr == "ccshim port: 5 files written\n", done.stderr
    env, dump = _built_without_ccshim(tree, tmp_path)
    no_ccshim = subprocess.run([str(NEWEST), "-S", "-c", "import ccshim"], env=env,
                               capture_output=True, text=True)
    assert "No module named 'ccshim'" in no_ccshim.stderr, no_ccshim.stderr
    suite = tmp_path / "suite"
    suite.mkdir()
    project_suites.suite_folder(HARMONICA, suite)
    report = tmp_path / "junit.xml"
    ran = subprocess.run([str(NEWEST), "-S", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          f"--junitxml={report}", *project_suites.SUITES[HARMONICA]["pytest"]],
                         cwd=suite, env=env, capture_output=True, text=True, timeout=1200)
    tail = ran.stdout[-3000:] + ran.stderr[-2000:]
    why: dict = {}
    found = project_suites.outcomes(report, why)
    baseline = json.loads((FIXTURES / "projects" / f"{HARMONICA}.json").read_text())
    there = baseline["runs"]["1"]["tests"]
    assert sorted(found) == sorted(there), tail
    numpy = subprocess.run([str(NEWEST), "-S", "-c", "import numpy; print(numpy.__version__)"],
                           env=env, capture_output=True, text=True).stdout.strip()
    lost = {t: found[t] for t, o in there.items() if o == "passed" and found[t] != "passed"}
    if tuple(map(int, numpy.split(".")[:2])) >= (2, 4) and NUMPY_24[0] in lost:
        assert NUMPY_24[1] in why[NUMPY_24[0]], why[NUMPY_24[0]]
        del lost[NUMPY_24[0]]
    assert not lost, f"passed on JAX {baseline['jax']}'s legacy path, not here: {lost}\n{tail}"
    # its kernels ran, each call typed, with the layouts its rules gave
    calls = project_ports.custom_call_lines(dump)
    assert set(re.findall(r'custom_call_target="([^"]+)"', "\n".join(calls))) == \
        HARMONICA_TARGETS
    assert all("api_version=API_VERSION_TYPED_FFI" in line for line in calls), calls[:3]
    assert all("operand_layout_constraints={s64[], s64[], " in line for line in calls), calls[:3]


# tests/fixtures/port/rule_ext --------------------------------------------

RULE_RUN = """\
import json
import numpy as np
import jax
import rule_ext

x = np.arange(12, dtype=np.float32).reshape(3, 4) / 8
y, sums = jax.jit(rule_ext.scale_and_sum, static_argnums=1)(x, 3)
twice = jax.jit(rule_ext.twice)(np.array([1.5, -2.0, 0.25], np.float32))
print(json.dumps({k: np.asarray(v).tobytes().hex() for k, v in
                  (("y", y), ("sums", sums), ("twice", twice))}))
"""


def _numpy_rule_ext() -> dict:
    """What the fixture's kernels compute, by NumPy in their order."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 8
    y = x * np.float32(3)
    sums = np.zeros(3, np.float32)
    for r in range(3):
        for c in range(4):
            sums[r] += y[r, c]
    twice = np.array([1.5, -2.0, 0.25], np.float32) * np.float32(2)
    return {"y": y.tobytes().hex(), "sums": sums.tobytes().hex(),
            "twice": twice.tobytes().hex()}


def _run(env: dict, cwd: pathlib.Path, prefix=(), flags=("-S",)) -> dict:
    ran = subprocess.run([*prefix, str(NEWEST), *flags, "-c", RULE_RUN], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads(ran.stdout.strip().splitlines()[-1])


@pytest.mark.once  # all it runs runs on .venv-newest's Python: the shorter suite runs it
def test_ported_translation_rules_give_zero_change_modes_bytes_without_ccshim(tmp_path):
    """The fixture ported (its setup.py build and its two rules), built by
    its own build, run in a Python where ccshim cannot be imported: NumPy's
    values, the bytes of zero-change mode on the unported build (the legacy
    path cannot run on this JAX without ccshim), and the column-major
    layouts its rule gave XLA."""
    if not NEWEST.exists():
        pytest.skip(f"no {NEWEST} (no Python 3.12 here): the newest JAX is not tested")
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "port" / "rule_ext", tree)
    done = _port(tree, "--apply")
    assert done.returncode == 0 and done.stderr == "ccshim port: 5 files written\n", done.stderr
    assert _port(tree).stdout == ""
    ops = (tree / "rule_ext" / "ops.py").read_text()
    assert "from jax.lib import xla_client" not in ops and "xops" not in ops
    assert "# a Python int: int64" in ops
    assert 'mlir.register_lowering(scale_and_sum_p, _scale_and_sum_translation, ' \
           'platform="cpu")' in ops and "mlir.register_lowering(twice_p, _twice_translation)" \
           in ops
    env, dump = _built_without_ccshim(tree, tmp_path)
    probe = subprocess.run([str(NEWEST), "-S", "-c", "import ccshim"], env=env,
                           capture_output=True, text=True)
    assert "No module named 'ccshim'" in probe.stderr, probe.stderr
    ported = _run(env, tmp_path)
    assert ported == _numpy_rule_ext()
    calls = project_ports.custom_call_lines(dump)
    assert {"rule_ext_scale_and_sum", "rule_ext_twice"} == set(
        re.findall(r'custom_call_target="([^"]+)"', "\n".join(calls)))
    assert all("api_version=API_VERSION_TYPED_FFI" in line for line in calls), calls
    # the rule's layouts: the operand and the first result column-major
    assert all("operand_layout_constraints={s64[], s32[], s64[], f32[3,4]{0,1}}" in line and
               "(f32[3,4]{0,1}, f32[3]{0}) custom-call(" in line
               for line in calls if "rule_ext_scale_and_sum" in line), calls

    # Zero-change mode on the unported build: its rules through ccshim's
    # emulated XlaBuilder, the kernels through ccshim.
    command = BUILD / "tools" / "ccshim"
    if not command.exists():
        fixture_missing(f"{command} (make build)")
    legacy = tmp_path / "legacy"
    shutil.copytree(FIXTURES / "port" / "rule_ext", legacy / "tree")
    legacy_env, _ = _built_without_ccshim(legacy / "tree", legacy)
    legacy_env.update(CCSHIM_PYTHON=str(NEWEST), CCSHIM_LIBRARY=str(BUILD / "libccshim.so"),
                      PYTHONPATH=os.pathsep.join([str(ROOT / "python"), str(legacy / "site")]))
    zero_change = _run(legacy_env, tmp_path, prefix=[str(command), "legacy", "--strict", "--"],
                       flags=())
    assert zero_change == ported


@pytest.mark.once
def test_translation_rules_it_cannot_port_are_said_and_the_rest_ported(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "port" / "rule_ext", tree)
    ops = tree / "rule_ext" / "ops.py"
    ops.write_text(ops.read_text() + RULES_REFUSED)
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "ccshim port: rule_ext/ops.py:76: not ported: the translation rule _pair_translation "
        "uses its CustomCall's op otherwise than by returning it (GetTupleElement, another "
        "op's operand): kept as it was",
        "ccshim port: rule_ext/ops.py:82: not ported: a new-style translation rule (ctx, "
        "avals_in, avals_out, ...: xla.register_translation or "
        "_backend_specific_translations): not ported yet",
        "ccshim port: rule_ext/ops.py:86: not ported: the translation rule _elsewhere_translation "
        "lowers 'elsewhere', whose kernel it found no source for: kept as it was",
        "ccshim port: rule_ext/ops.py:93: not ported: an XlaBuilder CustomCall in no "
        "translation rule it follows to an old-style registration "
        "(xla.backend_specific_translations[P][prim] = rule): not ported yet",
        "ccshim port: rule_ext/ops.py:99: not ported: the translation rule _shape_as_is uses a "
        "get_shape result otherwise than for its dimensions, element type and rank: kept as "
        "it was",
        "ccshim port: rule_ext/ops.py:103: not ported: the translation rule _forwarded_translation "
        "passes its CustomCall arguments through *args or **kwargs, which it cannot read: kept "
        "as it was",
        "ccshim port: rule_ext/ops.py:114: not ported: an XlaBuilder CustomCall in no "
        "translation rule it follows to an old-style registration "
        "(xla.backend_specific_translations[P][prim] = rule): not ported yet",
        "ccshim port: rule_ext/ops.py:117: not ported: a new-style translation rule (ctx, "
        "avals_in, avals_out, ...: xla.register_translation or "
        "_backend_specific_translations): not ported yet"]
    # the rules it refused are as they were, with their registrations; the
    # others are ported
    assert '+xla.backend_specific_translations["cpu"]' not in done.stdout
    assert "-xla.backend_specific_translations[\"cpu\"][scale_and_sum_p]" in done.stdout
    assert "def _pair_translation(c, x):" in ops.read_text()
    assert "+def _pair_translation" not in done.stdout and "+def _scale_and_sum_translation(ctx" \
        in done.stdout


RULES_REFUSED = """

def _pair_translation(c, x):
    shape = c.get_shape(x)
    pair = xops.CustomCall(c, b"rule_ext_twice", operands=(x,),
                           shape=xla_client.Shape.tuple_shape((shape, shape)))
    return xops.GetTupleElement(pair, 0)


xla.backend_specific_translations["cpu"][twice_p] = _pair_translation
xla.register_translation(twice_p, lambda ctx, avals_in, avals_out, x: [x], platform="cpu")


def _elsewhere_translation(c, x):
    return xops.CustomCall(c, b"elsewhere", operands=(x,), shape=c.get_shape(x))


xla.backend_specific_translations["cpu"][twice_p] = _elsewhere_translation


def _not_registered(c, x):
    return xops.CustomCall(c, b"rule_ext_twice", operands=(x,), shape=c.get_shape(x))


def _shape_as_is(c, x):
    shape = xla_client.Shape.array_shape(np.dtype(np.float32), (3,), (0,))
    return xops.CustomCallWithLayout(c, b"rule_ext_twice", operands=(x,), shape_with_layout=shape,
                                     operand_shapes_with_layout=(c.get_shape(x),))


def _forwarded_translation(c, x, **options):
    return xops.CustomCall(c, b"rule_ext_twice", operands=(x,), shape=c.get_shape(x), **options)


xla.backend_specific_translations["cpu"][twice_p] = _shape_as_is
xla.backend_specific_translations["cpu"][twice_p] = _forwarded_translation

# klujax's form: an alias of the private registry, given an adapter of the rule
_cpu_translations = xla._backend_specific_translations["cpu"]


def _adapted_translation(c, x):
    return xops.CustomCall(c, b"rule_ext_twice", operands=(x,), shape=c.get_shape(x))


_cpu_translations[twice_p] = lambda ctx, avals_in, avals_out, x: [
    _adapted_translation(ctx.builder, x)]
"""


SETUP_CPP = """\
#include <pybind11/pybind11.h>

void copy(void* out, const void** in) { *(float*)out = *(const float*)in[0]; }

template <typename T>
pybind11::capsule Encapsulate(T* fn) {
  return pybind11::capsule((void*)fn, "xla._CUSTOM_CALL_TARGET");
}

pybind11::dict Registrations() {
  pybind11::dict dict;
  dict["copy"] = Encapsulate(copy);
  return dict;
}

PYBIND11_MODULE(k, m) { m.def("registrations", &Registrations); }
"""

SETUP_PY = """\
from setuptools import Extension, setup

INCLUDES = ["vendor"]

setup(ext_modules=[
    Extension("pkg.k", sources=["pkg/k.cpp"], language="c++", include_dirs=INCLUDES,
              extra_compile_args=["-O2"]),  # the flags
    Extension("pkg.mixed", ["pkg/mixed.cpp", "pkg/helper.c"]),
])
"""


@pytest.mark.once
def test_a_setup_py_extension_gets_xla_headers_and_cxx17_where_it_compiles_only_cxx(tmp_path):
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    for name in ("k.cpp", "mixed.cpp"):
        (tree / "pkg" / name).write_text(SETUP_CPP)
    (tree / "setup.py").write_text(SETUP_PY)
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "ccshim port: setup.py:8: not ported: an Extension that compiles C as well as C++: "
        "C++17 (which XLA's FFI headers need) is not added; the compiler's default is"]
    assert "+    Extension(\"pkg.k\", sources=[\"pkg/k.cpp\"], language=\"c++\", " \
           "include_dirs=list(INCLUDES) + [jax_ffi.include_dir()],\n" \
           "+              extra_compile_args=[\"-O2\", \"-std=c++17\"]),  # the flags\n" \
           in done.stdout, done.stdout
    assert "+    Extension(\"pkg.mixed\", [\"pkg/mixed.cpp\", \"pkg/helper.c\"], " \
           "include_dirs=[jax_ffi.include_dir()]),\n" in done.stdout, done.stdout
    assert "+from jax import ffi as jax_ffi\n" in done.stdout
    assert _port(tree, "--apply").returncode == 0
    assert _port(tree).stdout == ""
