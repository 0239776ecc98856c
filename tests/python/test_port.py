"""`ccshim port` (docs/port.md, issue 42's first slice) on a real project:
exoplanet-core 0.3.1, the most-copied legacy form (pybind11 registrations()
capsules of C++ CPU kernels, xla_client.register_custom_call_target,
mlir.custom_call).

The patch it prints is the one kept in dev/census/ports/ (with what it said
it could not port); git apply takes it; on the ported tree it prints
nothing; the C command hands over to it; what it cannot port is said with
where and why while the rest is still ported.  In make test-projects (a
build and the suite take a few minutes): the patched tree, built by its own
build, passes its own suite on the newest JAX in a Python where ccshim
cannot be imported, as it passed on its reference, and every custom call in
the modules XLA compiled during that run is a typed-FFI one (read from
XLA's own dump of them).

The Cython form, on veros 1.7.0 (Cython capsules of CPU kernels,
jax.ffi.register_ffi_target(api_version=0), jax's internal custom_call):
its kept patch likewise; in make test's newest suite (about 25 s) the
patched tree built by its own setup.py and its TDMA run without ccshim on
the newest JAX give the bytes of XLA's legacy path, through typed calls only;
where nvcc is, its CUDA extension too, whose lowering for cuda gives the
legacy build's targets, opaque bytes and (not row-major) layouts, typed.
"""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD, FIXTURES, ROOT, fixture_missing
import project_ports
import project_suites
from project_modules import veros_build

pytest.importorskip("libcst", reason="ccshim port needs libcst (dev/setup.sh test installs it)")

PROJECT = "exoplanet-core-0.3.1"
KEPT = ROOT / "dev" / "census" / "ports"
NEWEST = ROOT / ".venv-newest" / "bin" / "python"
TARGETS = {"solve_kepler", "quad_solution_vector", "contact_points"}


def _port(*args, cwd=None, command=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), CCSHIM_PYTHON=sys.executable)
    prefix = command or [sys.executable, "-m", "ccshim.port"]
    done = subprocess.run([*prefix, *map(str, args)], env=env, cwd=cwd, capture_output=True,
                          timeout=300)
    # decoded as printed: a CRLF source's lines keep their CR in the patch
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(),
                                       done.stderr.decode())


# The projects whose ports are built and run under make test-projects, and
# the targets each must call, typed.
BUILT = {
    PROJECT: TARGETS,
    "celerite2-0.3.2": {f"celerite2_{op}{rev}" for op in (
        "factor", "solve_lower", "solve_upper", "matmul_lower", "matmul_upper")
        for rev in ("", "_rev")} | {"celerite2_general_matmul_lower",
                                     "celerite2_general_matmul_upper"},
}


def _tree(tmp_path: pathlib.Path, name="tree", project=PROJECT) -> pathlib.Path:
    """A copy of the project's sdist tree, as published."""
    src = project_ports.source_tree(project)
    if not src.is_dir():
        fixture_missing(f"{project}'s sdist ({src.parent.name})")
    dst = tmp_path / name
    shutil.copytree(src, dst)
    return dst


def _git(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def _patched(tmp_path: pathlib.Path, project=PROJECT) -> pathlib.Path:
    tree = _tree(tmp_path, project=project)
    patch = tmp_path / "port.patch"
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    patch.write_text(done.stdout)
    check = _git("apply", "--check", str(patch), cwd=tree)
    assert check.returncode == 0, check.stderr
    applied = _git("apply", str(patch), cwd=tree)
    assert applied.returncode == 0, applied.stderr
    return tree


@pytest.mark.once
def test_the_kept_patch_is_what_port_prints_now(tmp_path):
    done = _port(_tree(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == (KEPT / f"{PROJECT}.patch").read_bytes().decode(), \
        "dev/census/ports/ is stale: python dev/census/ports.py writes it anew"
    assert done.stderr == (KEPT / f"{PROJECT}.refused").read_bytes().decode()
    files = re.findall(r"^diff --git a/(\S+) ", done.stdout, re.M)
    assert files == ["CMakeLists.txt", "pyproject.toml", "src/exoplanet_core/jax/cpu_driver.cpp",
                     "src/exoplanet_core/jax/gpu_driver.cpp", "src/exoplanet_core/jax/ops.py",
                     "src/exoplanet_core/jax/xla_legacy_call.h"]
    # Each kernel exported as its handler; the bodies are not touched.
    for target in TARGETS:
        assert f'+  dict["{target}"] = EncapsulateFunction({target}_ffi);' in done.stdout
        assert f"+XLA_FFI_DEFINE_HANDLER({target}_ffi," in done.stdout
    # The CUDA kernels (defined in cuda_kernels.cc.cu, declared in the
    # header gpu_driver.cpp includes): a handler on the CUDA stream each,
    # their registration typed, their lowering passing the descriptor as
    # the opaque attribute.
    for kernel in ("CudaKepler", "CudaQuadSolutionVector"):
        assert f"+XLA_FFI_DEFINE_HANDLER({kernel}_ffi,\n" \
               f"+                       xla_legacy_call::GpuHandler<{kernel}>," in done.stdout
    assert "+                           .Ctx<xla::ffi::PlatformStream<cudaStream_t>>()" \
        in done.stdout
    assert '+        jax.ffi.register_ffi_target(_name, _value, platform="CUDA")' in done.stdout
    assert "+        )(ctx, *args, opaque=np.frombuffer(gpu_driver.cuda_descriptor(size), " \
           "dtype=np.uint8))" in done.stdout
    removed = [line for line in done.stdout.splitlines() if line.startswith("-")
               and not line.startswith("---")]
    assert not [line for line in removed if "reinterpret_cast" in line or "for (int n" in line]
    assert done.stderr == ""      # nothing is left unported


@pytest.mark.once
def test_git_apply_takes_it_and_a_second_port_prints_nothing(tmp_path):
    tree = _patched(tmp_path)
    again = _port(tree)
    assert again.returncode == 0, again.stderr
    assert again.stdout == ""
    ops = (tree / "src/exoplanet_core/jax/ops.py").read_text()
    assert "xla_client" not in ops and "jax.ffi.ffi_lowering(" in ops
    # --apply writes the same tree.
    other = _tree(tmp_path, "other")
    applied = _port(other, "--apply")
    assert applied.returncode == 0, applied.stderr
    diff = subprocess.run(["diff", "-r", str(tree), str(other)], capture_output=True, text=True)
    assert diff.returncode == 0, diff.stdout


@pytest.mark.once
@pytest.mark.parametrize("project", ["celerite2-0.3.2"])
def test_a_kept_patch_is_what_port_prints_applies_and_ports_once(tmp_path, project):
    """The census projects whose names are made at run time: the kept patch
    and refusals are what it prints, git apply takes the patch, and on the
    ported tree it prints nothing."""
    tree = _tree(tmp_path, project=project)
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (KEPT / f"{project}.patch").read_bytes().decode(), \
        "dev/census/ports/ is stale: python dev/census/ports.py writes it anew"
    assert done.stderr == (KEPT / f"{project}.refused").read_bytes().decode()
    (tmp_path / "port.patch").write_text(done.stdout)
    applied = _git("apply", str(tmp_path / "port.patch"), cwd=tree)
    assert applied.returncode == 0, applied.stderr
    again = _port(tree)
    assert again.returncode == 0 and again.stdout == "", again.stdout[:2000]


@pytest.mark.once
def test_the_ccshim_command_hands_over_to_python(tmp_path):
    command = [str(BUILD / "tools" / "ccshim"), "port"]
    if not pathlib.Path(command[0]).exists():
        fixture_missing(f"{command[0]} (make build)")
    tree = _tree(tmp_path)
    assert _port(tree, command=command).stdout == _port(tree).stdout != ""
    bad = _port(tmp_path / "absent", command=command)
    assert bad.returncode == 2
    assert "expected a project's source folder, got no folder" in bad.stderr


SYNTHETIC_CPP = """\
#include <pybind11/pybind11.h>

void plain(void* out, const void** in) { *(float*)out = *(const float*)in[0]; }

void with_status(void* out, const void** in, XlaCustomCallStatus* status) {}

pybind11::dict Registrations() {
  pybind11::dict dict;
  dict["plain"] = EncapsulateFunction(plain);
  dict["with_status"] = EncapsulateFunction(with_status);
  dict["elsewhere"] = EncapsulateFunction(nowhere_defined);
  return dict;
}

PYBIND11_MODULE(kernels, m) { m.def("registrations", &Registrations); }
"""

SYNTHETIC_PY = """\
from jax.interpreters import mlir
from jax.lib import xla_client
from jaxlib.hlo_helpers import custom_call

from pkg import kernels

for _name, _value in kernels.registrations().items():
    xla_client.register_custom_call_target(_name, _value, platform="cpu")


def _plain_lowering(ctx, x):
    # keeps its comment
    return mlir.custom_call(
        "plain",
        operands=[x],
        result_types=[mlir.aval_to_ir_type(a) for a in ctx.avals_out],
    ).results


def _helpers_lowering(ctx, x):
    return custom_call("plain", result_types=[T], operands=[x], api_version=1).results
"""

# A lowering whose target it cannot follow, in a module that registers no
# target (in the one that does, it would hold that module's targets legacy).
SYNTHETIC_OTHER_PY = """\
from jax.interpreters import mlir


def _other_lowering(ctx, x, name=NAMES[0]):
    return mlir.custom_call(name, operands=[x], result_types=[]).results
"""


def _synthetic(tmp_path: pathlib.Path, other_py: str) -> pathlib.Path:
    """A tree of SYNTHETIC_CPP's kernels, SYNTHETIC_PY's registration and
    lowerings, and other_py beside them, built by CMake."""
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "kernels.cpp").write_text(SYNTHETIC_CPP)
    (tree / "pkg" / "ops.py").write_text(SYNTHETIC_PY)
    (tree / "pkg" / "other.py").write_text(other_py)
    (tree / "CMakeLists.txt").write_text(
        "project(p LANGUAGES CXX)\nfind_package(pybind11 CONFIG REQUIRED)\n"
        'pybind11_add_module(kernels "pkg/kernels.cpp")\n')
    return tree


@pytest.mark.once
def test_what_it_cannot_port_is_said_with_where_and_why(tmp_path):
    done = _port(_synthetic(tmp_path, SYNTHETIC_OTHER_PY))
    assert done.returncode == 0, done.stderr
    said = done.stderr.splitlines()
    assert "ccshim port: pkg/kernels.cpp:10: not ported: 'with_status': with_status " \
           "(pkg/kernels.cpp:5) is a kernel that reports through XlaCustomCallStatus " \
           "without including xla/service/custom_call_status.h with quotes: not ported yet" \
           in said, said
    assert "ccshim port: pkg/kernels.cpp:11: not ported: 'elsewhere': nowhere_defined has " \
           "no source in the tree" in said, said
    assert "ccshim port: pkg/ops.py:8: not ported: registers the targets of kernels, " \
           "elsewhere, with_status not ported (said above): those kept legacy " \
           "(api_version=0)" in said, said
    assert any(line.startswith("ccshim port: pkg/other.py:5: not ported: a custom call whose "
                               "target is a name it cannot follow") for line in said), said
    # Each entry registered as it now is: the ported one typed.
    assert '+    jax.ffi.register_ffi_target(_name, _value, platform="cpu", ' \
           'api_version=0 if _name in ("elsewhere", "with_status") else 1)' in done.stdout
    # The rest is still ported: the plain kernel's handler, its lowering
    # (comment kept), the build.
    assert '+  dict["plain"] = EncapsulateFunction(plain_ffi);' in done.stdout
    assert '+  dict["with_status"]' not in done.stdout
    assert "     # keeps its comment\n-    return mlir.custom_call(\n" \
           "+    return jax.ffi.ffi_lowering(\n" in done.stdout, done.stdout
    # jaxlib.hlo_helpers.custom_call too; result types other than the
    # avals' are kept as given.
    assert "-    return custom_call(\"plain\", result_types=[T], operands=[x], api_version=1)" \
           ".results\n+    return jax.ffi.ffi_lowering(\"plain\", result_types=[T], " \
           "skip_ffi_layout_processing=True)(ctx, *[x])\n" in done.stdout, done.stdout
    assert "+target_include_directories(kernels SYSTEM PRIVATE ${XLA_DIR})" in done.stdout
    assert "+target_compile_features(kernels PRIVATE cxx_std_17)" in done.stdout


@pytest.mark.once
def test_a_bound_name_reaches_a_site_under_a_test_on_something_else(tmp_path):
    """partial(rule, "plain") binds the rule's first parameter; an `if`
    around the site that does not read it (one on the operand's rank) lets
    the name reach the site, as one on it would decide."""
    done = _port(_synthetic(tmp_path, """\
from functools import partial
from jax.interpreters import mlir


def _bound_lowering(name, ctx, x):
    if ctx.avals_in[0].ndim:
        if name == "elsewhere":
            return x
        return mlir.custom_call(name, operands=[x], result_types=[]).results
    return x


mlir.register_lowering(p, partial(_bound_lowering, "plain"), platform="cpu")
"""))
    assert done.returncode == 0, done.stderr
    assert "other.py" not in done.stderr, done.stderr
    assert "-        return mlir.custom_call(name, operands=[x], result_types=[]).results\n" \
        "+        return jax.ffi.ffi_lowering(name, result_types=[], " \
        "skip_ffi_layout_processing=True)(ctx, *[x])\n" in done.stdout, done.stdout


@pytest.mark.once
@pytest.mark.parametrize("call, why", [
    ('mlir.custom_call("plain", operands=[x], result_types=[], **options)',
     "a custom call with arguments passed through *args or **kwargs, which it cannot read"),
    ('custom_call("plain", [T], [x])',      # old jaxlib's positional form
     "a custom call whose arguments other than its target are not all given by keyword")])
def test_a_custom_call_it_cannot_read_whole_is_said_and_its_target_held(tmp_path, call, why):
    """A **kwargs (or *args) may pass an api_version, a backend_config or
    layouts the port cannot see, and an argument by position is one it does
    not place; ported, either would be dropped. The site is kept legacy and
    its target held, in the module that registers it too."""
    done = _port(_synthetic(tmp_path, "from jax.interpreters import mlir\nfrom jaxlib."
                            "hlo_helpers import custom_call\n\ndef _forwarded_lowering(ctx, "
                            f"x, **options):\n    return {call}.results\n"))
    assert done.returncode == 0, done.stderr
    said = done.stderr.splitlines()
    assert f"ccshim port: pkg/other.py:5: not ported: {why}: kept legacy, its targets held" \
        in said, said
    assert "ccshim port: pkg/kernels.cpp:9: not ported: 'plain': a lowering or " \
           "registration of it stays legacy (said below): kept legacy with it" in said, said
    assert "plain_ffi" not in done.stdout and "ffi_lowering" not in done.stdout, done.stdout
    assert '+    jax.ffi.register_ffi_target(_name, _value, platform="cpu", api_version=0)' \
        in done.stdout, done.stdout
    assert "other.py" not in done.stdout


def _built_without_ccshim(tree: pathlib.Path, tmp_path: pathlib.Path):
    """The ported tree built by its own build into tmp_path/site, and the
    environment of a Python where ccshim cannot be imported with XLA dumping
    what it compiles into the folder returned beside it (project_ports)."""
    site, dump = tmp_path / "site", tmp_path / "hlo"
    project_ports.build(tree, site)
    return project_ports.environment(site, NEWEST, dump), dump


@pytest.mark.skipif(not os.environ.get("CCSHIM_TEST_PROJECTS"),
                    reason="make test-projects runs it: the project's build and its suite take "
                           "it past make test's time budget")
@pytest.mark.once  # all it runs runs on .venv-newest's Python
@pytest.mark.parametrize("project", sorted(BUILT))
def test_the_ported_project_builds_and_passes_its_suite_without_ccshim(tmp_path, project):
    if not NEWEST.exists():
        pytest.skip(f"no {NEWEST} (no Python 3.12 here): the newest JAX is not tested")
    site = tmp_path / "site"
    project_ports.build(project_ports.patched(project, tmp_path), site, project=project)
    ran = project_ports.run(project, site, NEWEST, timeout=1200)
    assert ran["ccshim"] == "ModuleNotFoundError: No module named 'ccshim'", ran["ccshim"]
    found, tail = ran["found"], ran["tail"]
    baseline = json.loads((FIXTURES / "projects" / f"{project}.json").read_text())
    there = baseline["runs"]["1"]["tests"]
    passed_there = sorted(t for t, o in there.items() if o == "passed")
    assert passed_there
    lost = {t: found.get(t, "not run") for t in passed_there if found.get(t) != "passed"}
    assert not lost, f"passed on JAX {baseline['jax']}'s legacy path, not here: {lost}\n{tail}"
    assert sorted(found) == sorted(there), tail
    # Every custom call XLA compiled is typed (API version 4), the
    # project's targets among them.
    assert BUILT[project] <= set(ran["calls"]), ran["calls"]
    assert not ran["untyped"], ran["untyped"][:5]


STATUS_RUN = """\
import numpy as np
import jax
import status_ext

x = np.array([1.5, 2.25, 3.0], np.float32)
print("twice", jax.jit(status_ext.twice)(x)[0].tolist())
whole, frac = jax.jit(status_ext.checked_split)(x)
print("split", whole.tolist(), frac.tolist())
try:
    jax.block_until_ready(jax.jit(status_ext.checked_split)(-x))
except Exception as e:
    print("error", str(e).splitlines()[0])
"""


@pytest.mark.once  # all it runs runs on .venv-newest's Python
@pytest.mark.parametrize("decode", ["tables", "each"])
def test_a_ported_status_kernel_fails_as_an_ffi_error_with_its_message(tmp_path, monkeypatch,
                                                                       decode):
    """A fixture of the same form with a single-result kernel and a
    status-returning (API version 2) tuple-result kernel: ported, built by
    its own build, run without ccshim; its handlers reading the buffers from
    the frame's tables, and (XLA_LEGACY_CALL_DECODE_EACH, what headers of
    other FFI versions get) each through get<AnyBuffer>().  The tuple-result
    kernel's call site fixes its counts, so its handler takes each buffer
    bound by ffi.h (CpuStatusFixedHandler) either way."""
    if decode == "each":
        monkeypatch.setenv("CXXFLAGS", "-DXLA_LEGACY_CALL_DECODE_EACH")
    if not NEWEST.exists():
        pytest.skip(f"no {NEWEST} (no Python 3.12 here): the newest JAX is not tested")
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "port" / "status_ext", tree)
    done = _port(tree, "--apply")
    assert done.returncode == 0 and done.stderr == "ccshim port: 6 files written\n", done.stderr
    assert _port(tree).stdout == ""
    # twice's lowering takes its result types from the avals (a count known
    # at run time); checked_split's writes its two operands and two results
    # out, so its handler is bound with those counts (_binding)
    source = (tree / "src" / "status_ext" / "cpu_ops.cpp").read_text()
    # (in parentheses: the template's comma is not one between the macro's arguments)
    assert "(xla_legacy_call::CpuHandler<scaled<float, 2>>)," in source
    assert "xla_legacy_call::CpuStatusFixedHandler<checked_split>," in source
    env, dump = _built_without_ccshim(tree, tmp_path)
    ran = subprocess.run([str(NEWEST), "-S", "-c", project_ports.NO_CCSHIM + STATUS_RUN],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.splitlines() == [
        "twice [3.0, 4.5, 6.0]",
        "split [1.0, 2.0, 3.0] [0.5, 0.25, 0.0]",
        "error INTERNAL: checked_split: negative input"], ran.stdout
    calls = project_ports.custom_call_lines(dump)
    assert {"status_ext_twice", "status_ext_checked_split"} <= set(
        re.findall(r'custom_call_target="([^"]+)"', "\n".join(calls)))
    assert all("api_version=API_VERSION_TYPED_FFI" in line for line in calls), calls


@pytest.mark.once
def test_the_forms_it_does_not_port_yet_are_said_with_where(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "port" / "other_forms", tree)
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    # ctypes' and cffi's are kept legacy, registered as today's JAX does
    assert re.findall(r"^\+\+\+ b/(.*)", done.stdout, re.M) == ["loaded.py"], done.stdout
    assert done.stdout.count("api_version=0)\n") == 4, done.stdout
    kept = ": kernels exported through ctypes or cffi are not ported yet: kept as " \
        "jax.ffi.register_ffi_target(..., api_version=0)"
    assert done.stderr.splitlines() == [
        "ccshim port: m.cc:3: not ported: a kernel registered with XLA's registration macro: "
        "not ported yet",
        "ccshim port: k.pyx:5: not ported: a Cython capsule export other than "
        "register(\"name\", <void*>(kernel)) through a helper: not ported yet",
        "ccshim port: loaded.py:11: not ported: registers 'scale', a kernel of _lib, a library "
        "loaded by ctypes.CDLL" + kept,
        "ccshim port: loaded.py:17: not ported: registers 'shift', a kernel of _other, a "
        "library loaded by ctypes.cdll.LoadLibrary" + kept,
        "ccshim port: loaded.py:22: not ported: registers 'clip', a kernel of _clipped, a "
        "library loaded by cffi's dlopen" + kept,
        "ccshim port: loaded.py:28: not ported: registers a name it cannot follow, a capsule "
        "made in Python (jax.ffi.pycapsule)" + kept,
        "ccshim port: rules.py:12: not ported: registers a kernel made at run time by numba "
        "(no source in the tree to port): kept as it is",
        "ccshim port: rules.py:16: not ported: an XlaBuilder CustomCall in no translation rule "
        "it follows to an old-style registration (xla.backend_specific_translations[P][prim] = "
        "rule): not ported yet",
        "ccshim port: rules.py:20: not ported: lowers k, not ported: kept a legacy custom call",
        "ccshim port: rules.py:24: not ported: lowers k, not ported: kept a legacy custom call"]


@pytest.mark.once
def test_several_trees_make_one_patch_from_their_common_folder(tmp_path):
    exo = _tree(tmp_path, "exo")
    shutil.copytree(FIXTURES / "port" / "status_ext", tmp_path / "ext")
    # something it does not port, said relative to the common folder
    (exo / "src" / "macro.cc").write_text("XLA_REGISTER_CUSTOM_CALL_TARGET(f, \"Host\");\n")
    done = _port(exo, tmp_path / "ext")
    assert done.returncode == 0, done.stderr
    files = re.findall(r"^diff --git a/(\S+) ", done.stdout, re.M)
    assert "exo/src/exoplanet_core/jax/ops.py" in files and "ext/src/status_ext/ops.py" in files
    assert "ccshim port: exo/src/macro.cc:1: not ported: " in done.stderr, done.stderr
    patch = tmp_path / "both.patch"
    patch.write_text(done.stdout)
    check = _git("apply", "--check", str(patch), cwd=tmp_path)
    assert check.returncode == 0, check.stderr


# veros 1.7.0: Cython capsules of CPU kernels (docs/port.md) ---------------

VEROS = "veros-1.7.0"
VEROS_TARGETS = ["tdma_cython_double", "tdma_cython_float"]


def _veros_tree(tmp_path: pathlib.Path, name="veros") -> pathlib.Path:
    """A copy of veros's sdist tree, as published (dev/setup.sh unpacks it)."""
    src = project_suites.cached("veros-1.7.0-src") / "veros-1.7.0"
    if not (src / "setup.py").exists():
        fixture_missing(f"{VEROS}'s sdist ({src})")
    dst = tmp_path / name
    shutil.copytree(src, dst)
    return dst


def _veros_patched(tmp_path: pathlib.Path) -> pathlib.Path:
    tree = _veros_tree(tmp_path)
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    patch = tmp_path / "veros.patch"
    patch.write_text(done.stdout)
    for args in (("apply", "--check", str(patch)), ("apply", str(patch))):
        ran = _git(*args, cwd=tree)
        assert ran.returncode == 0, ran.stderr
    return tree


@pytest.mark.once
def test_veros_kept_patch_is_what_port_prints_now_and_git_apply_takes_it(tmp_path):
    tree = _veros_tree(tmp_path)
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (KEPT / f"{VEROS}.patch").read_bytes().decode(), \
        "dev/census/ports/ is stale: python dev/census/ports.py writes it anew"
    assert done.stderr == (KEPT / f"{VEROS}.refused").read_bytes().decode()
    files = re.findall(r"^diff --git a/(\S+) ", done.stdout, re.M)
    special = "veros/core/special/"
    assert files == ["pyproject.toml", "setup.py"] + [special + f for f in (
        "tdma_.py", "tdma_cuda_.pyx", "tdma_cuda__ffi.cpp", "tdma_cuda__ffi.h",
        "tdma_cython_.pyx", "tdma_cython__ffi.cpp", "tdma_cython__ffi.h", "xla_legacy_call.h")]
    assert done.stderr == ""        # every kernel ported
    for target in VEROS_TARGETS:
        # the kernel made public (C linkage), its handler's capsule exported
        assert f"+cdef public void {target}(void** out_ptr, void** data_ptr) nogil:" \
            in done.stdout
        assert f"+register_custom_call_target('{target}', <void*>({target}_ffi))" in done.stdout
        assert f"+XLA_FFI_DEFINE_HANDLER_SYMBOL({target}_ffi," in done.stdout
    # the kernels' bodies are not touched: only their declarations change
    removed = [line for line in done.stdout.splitlines()
               if line.startswith("-") and not line.startswith("---")]
    assert [line for line in removed if line.startswith("-cdef")] == [
        f"-cdef void {t}(void** out_ptr, void** data_ptr) nogil:" for t in VEROS_TARGETS]
    assert '+        "veros.core.special.tdma_cython_": ["tdma_cython_.pyx", ' \
           '"tdma_cython__ffi.cpp"],' in done.stdout
    assert "+            ext.include_dirs.append(jax_ffi.include_dir())" in done.stdout
    assert '+        jax.ffi.register_ffi_target(kernel_name, fn, platform="cpu")\n' \
        in done.stdout
    assert "+    out = jax.ffi.ffi_lowering(\n" in done.stdout
    assert "-    return out.results[:-1]\n" in done.stdout
    assert "+    return out[:-1]\n" in done.stdout
    # the CUDA kernels: their lowering's layouts are not row-major (the
    # last dimension major), which ffi_lowering would not keep: the call
    # is typed in place, its layouts and results as they were
    # (python/ccshim/port/_typed_call.py; test_port_gpu.py lowers it)
    assert '+        jax.ffi.register_ffi_target(kernel_name, fn, platform="CUDA")\n' \
        in done.stdout
    assert "         result_layouts=out_layouts,\n         operand_layouts=(arr_layout,) * 4,\n" \
        "-        backend_config=descriptor,\n+        backend_config={\"opaque\": mlir.ir_attribute(" \
        "np.frombuffer(descriptor, dtype=np.uint8))},\n+        api_version=4,\n     )\n" \
        "     return out.results[:-1]\n" in done.stdout, done.stdout
    for target, kernel in (("tdma_cuda_float", "CudaTridiagFloat"),
                           ("tdma_cuda_double", "CudaTridiagDouble")):
        assert f"+register_custom_call_target(\"{target}\", <void*>({kernel}_ffi))" \
            in done.stdout
        assert f"xla_legacy_call::GpuHandler<{kernel}>," in done.stdout
    # git takes it; the ported tree ports to nothing; --apply writes the same
    tree = _veros_patched(tmp_path / "applied")
    again = _port(tree)
    assert again.returncode == 0 and again.stdout == "", again.stderr
    other = _veros_tree(tmp_path, "other")
    assert _port(other, "--apply").returncode == 0
    diff = subprocess.run(["diff", "-r", "-x", ".git", str(tree), str(other)],
                          capture_output=True, text=True)
    assert diff.returncode == 0, diff.stdout


SYNTHETIC_PYX = """\
from cpython.pycapsule cimport PyCapsule_New

cdef extern from "c_kernels.h":
    void from_c(void* out, const void** ins) nogil


cdef void ok(void* out, const void** ins) nogil:
    (<float*>out)[0] = (<const float*>ins[0])[0]


cdef void odd(int n, double* x) nogil:
    pass


targets = {}

cdef export(unicode name, void* fn):
    targets[name] = PyCapsule_New(fn, "xla._CUSTOM_CALL_TARGET", NULL)

export("ok", <void*>(ok))
export("from_c", <void*>(from_c))
export("odd", <void*>(odd))
export("gone", <void*>(nowhere))
"""


@pytest.mark.once
def test_what_it_cannot_port_of_a_cython_export_is_said_and_the_rest_ported(tmp_path):
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "k.pyx").write_text(SYNTHETIC_PYX)
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "ccshim port: pkg/k.pyx:21: not ported: 'from_c': from_c is declared cdef extern "
        "(its source is not this .pyx): not ported yet",
        "ccshim port: pkg/k.pyx:22: not ported: 'odd': odd (pkg/k.pyx:11) is a signature it "
        "does not know (int n, double* x)",
        "ccshim port: pkg/k.pyx:23: not ported: 'gone': nowhere has no definition in k.pyx",
        "ccshim port: pkg/k.pyx:1: not ported: its build (no setup.py at the tree's root) is "
        "not ported yet: compile the handlers' source into the extension"]
    # the CPU kernel is ported (its `void*`/`const void**` as declared);
    # the others are exported as they were
    assert re.findall(r"^diff --git a/(\S+) ", done.stdout, re.M) == [
        "pkg/k.pyx", "pkg/k_ffi.cpp", "pkg/k_ffi.h", "pkg/xla_legacy_call.h"]
    assert "+cdef public void ok(void* out, const void** ins) nogil:" in done.stdout
    assert '+export("ok", <void*>(ok_ffi))' in done.stdout
    assert "+void ok(void* out, const void** ins);" in done.stdout
    assert "+  ok((void*)out, (const void**)in);" in done.stdout
    assert "+export(\"odd\"" not in done.stdout and "odd_ffi" not in done.stdout
    # ported, it ports to nothing more; the kernels left are said again
    assert _port(tree, "--apply").returncode == 0
    again = _port(tree)
    assert again.stdout == "" and again.stderr.count("not ported:") == 3, again.stderr


def _veros_run(python: pathlib.Path, build: pathlib.Path, tmp_path: pathlib.Path,
               name: str, no_site: bool, program=("veros_tdma_program.py", "xla")
               ) -> tuple[dict, list[str]]:
    """program (tests/python/, its arguments; default veros_tdma_program.py's
    "xla" mode: no ccshim imported) on build; its report and every
    custom-call line of the modules XLA compiled."""
    dump = tmp_path / f"hlo-{name}"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CCSHIM_", "PYTHON", "XLA_", "JAX_"))}
    env["XLA_FLAGS"] = f"--xla_dump_to={dump} --xla_dump_hlo_as_text"
    flags = []
    if no_site:
        # no site processing: the venv's .pth puts this tree's python/ on
        # the path; its site-packages alone on PYTHONPATH
        env["PYTHONPATH"] = project_ports.site_packages(python)
        flags = ["-S"]
        probe = subprocess.run([str(python), "-S", "-c", "import ccshim"], env=env,
                               capture_output=True, text=True)
        assert "No module named 'ccshim'" in probe.stderr, probe.stderr
    ran = subprocess.run([str(python), *flags, str(ROOT / "tests" / "python" / program[0]),
                          *program[1:], str(build)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    calls = project_ports.custom_call_lines(dump)
    return json.loads(ran.stdout.strip().splitlines()[-1]), calls


def _veros_cuda_lowered_alike(tree: pathlib.Path, legacy_build: pathlib.Path,
                              tmp_path: pathlib.Path) -> None:
    """veros's CUDA path, lowered for cuda on the newest JAX (no GPU here):
    the ported build (nvcc built its extension) in a Python where ccshim
    cannot be imported gives the legacy build's custom calls, typed: the
    same targets, opaque bytes and layouts, its last dimension the major
    one, both results' layouts kept (ffi_lowering would have dropped them)."""
    assert list((tree / "veros/core/special").glob("tdma_cuda_.*.so"))
    program = ("veros_cuda_lowering_program.py",)
    ported, _ = _veros_run(NEWEST, tree, tmp_path, "cuda-ported", no_site=True,
                           program=program)
    legacy, _ = _veros_run(NEWEST, legacy_build, tmp_path, "cuda-legacy", no_site=False,
                           program=program)
    assert ported["ccshim"] == "ModuleNotFoundError: No module named 'ccshim'", ported["ccshim"]
    assert ported["gpu_ext"] and legacy["gpu_ext"]
    for dtype, target in (("float64", "tdma_cuda_double"), ("float32", "tdma_cuda_float")):
        (typed,), (old,) = ported["calls"][dtype], legacy["calls"][dtype]
        assert (typed["target"], typed["version"], old["version"]) == (target, 4, 2), (typed, old)
        assert typed["opaque"] == old["opaque"] != ""
        assert typed["operand_layouts"] == old["operand_layouts"] == [[1, 0, 2]] * 4
        assert typed["result_layouts"] == old["result_layouts"] == [[1, 0, 2]] * 2


@pytest.mark.once  # all it runs runs on .venv-newest's Python
def test_ported_veros_builds_and_solves_as_the_legacy_path_without_ccshim(tmp_path):
    """veros's patched tree built by its own setup.py (build_ext --inplace,
    as dev/setup.sh builds it); its TDMA on the newest JAX and on the one
    veros pins, in a Python where ccshim cannot be imported, gives the bytes
    XLA's legacy path gives with the unported build, and every custom call
    XLA compiled is typed."""
    if not NEWEST.exists():
        pytest.skip(f"no {NEWEST} (no Python 3.12 here): the newest JAX is not tested")
    legacy_build = veros_build("cp312")
    if not (legacy_build / ".complete").exists():
        fixture_missing(f"veros 1.7.0 was not built for Python 3.12 ({legacy_build})")
    builder = project_suites.cached("venv-build-cp312") / "bin" / "python"
    reference = project_suites.cached("venv-jax-0.11.2") / "bin" / "python"
    for python in (builder, reference):
        if not python.exists():
            fixture_missing(f"{python} (dev/setup.sh test makes it)")
    tree = _veros_patched(tmp_path)
    # As dev/setup.sh builds veros: setup.py build_ext --inplace with the
    # build venv's Cython and setuptools.  The headers are those of the
    # JAX veros pins (0.11.2, its reference venv's): handlers built against
    # them load on that JAX and on newer ones, not the other way round.
    # Its CUDA extension too where nvcc is (veros's cuda_ext finds it on
    # PATH): veros makes it optional, so here it is required, not left out.
    cuda = "1" if shutil.which("nvcc") else ""
    built = subprocess.run([str(builder), "setup.py", "build_ext", "--inplace"], cwd=tree,
                           env={**os.environ, "PATH": f"{builder.parent}{os.pathsep}"
                                f"{os.environ['PATH']}", "VEROS_REQUIRE_CYTHON_EXT": "1",
                                "VEROS_REQUIRE_CUDA_EXT": cuda,
                                "PYTHONPATH": project_ports.site_packages(reference)},
                           capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert list((tree / "veros/core/special").glob("tdma_cython_.*.so")), built.stdout[-2000:]
    if cuda:
        _veros_cuda_lowered_alike(tree, legacy_build, tmp_path)
    assert "venv-jax-0.11.2" in built.stdout and "jaxlib/include" in built.stdout

    ported, calls = _veros_run(NEWEST, tree, tmp_path, "ported", no_site=True)
    legacy, legacy_calls = _veros_run(NEWEST, legacy_build, tmp_path, "legacy", no_site=True)
    # XLA's legacy path on the unported build, the same JAX: the same bytes
    assert ported["outputs"] == legacy["outputs"]
    assert ported["targets"] == legacy["targets"] == {"float64": ["tdma_cython_double"],
                                                      "float32": ["tdma_cython_float"]}
    assert ported["scipy_error"]["float64"] < 1e-13 and ported["scipy_error"]["float32"] < 1e-5
    # XLA's own dump of what it compiled: typed calls where the unported
    # build's were legacy (API version 2)
    assert set(re.findall(r'custom_call_target="([^"]+)"', "\n".join(calls))) == \
        set(VEROS_TARGETS)
    assert calls and all("api_version=API_VERSION_TYPED_FFI" in line for line in calls), calls
    assert legacy_calls and all("API_VERSION_STATUS_RETURNING" in line for line in legacy_calls)
    # the same build on the JAX veros pins, without ccshim: the same bytes
    pinned_jax, pinned_calls = _veros_run(reference, tree, tmp_path, "0.11.2", no_site=True)
    assert pinned_jax["outputs"] == ported["outputs"]
    assert pinned_calls and all("API_VERSION_TYPED_FFI" in line for line in pinned_calls)
    # and the bytes of XLA's legacy path on the pinned JAX (make test's
    # other venv, veros built for it by dev/setup.sh)
    pinned, pinned_build = ROOT / ".venv" / "bin" / "python", veros_build("cp311")
    if pinned.exists() and (pinned_build / ".complete").exists():
        there, _ = _veros_run(pinned, pinned_build, tmp_path, "pinned", no_site=False)
        assert ported["outputs"] == there["outputs"]
