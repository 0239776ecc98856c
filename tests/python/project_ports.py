"""A census project's kept port (dev/census/ports/PROJECT.patch, what
`ccshim port` prints for its sdist), applied to a copy of that sdist, built
by the project's own build as a user would (pip install, no build
isolation) and its own suite run where ccshim cannot be imported; the
modules XLA compiled during the run read back from XLA's own dump.  Shared
by tests/python/test_port.py (make test-projects) and dev/census/census.py
port (make census).
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

import project_suites
from project_modules import cached, fetch

ROOT = project_suites.ROOT
KEPT = ROOT / "dev" / "census" / "ports"
STATE = ROOT / "dev" / "census" / "state"
NEWEST = ROOT / ".venv-newest" / "bin" / "python"
# Where a project's source is not its suite's folder (cache folder, tree).
SOURCES = {
    "celerite2-0.3.2": ("celerite2-0.3.2-src", "celerite2-0.3.2"),
    "veros-1.7.0": ("veros-1.7.0-src", "veros-1.7.0"),
    "sphericart-jax-1.0.5": ("census/sphericart-jax-1.0.5-src", "sphericart_jax-1.0.5"),
}
# Projects whose kernels live in another package: each tree under the name
# it has in the patch, copied side by side as a user's two checkouts are.
TREES = {
    "pybamm-26.10.1.1": {"PyBaMM": ("census/pybamm-26.10.1.1-src", "pybamm-26.10.1.1"),
                         "pybammsolvers": ("census/pybammsolvers-0.11.1-src",
                                           "pybammsolvers-0.11.1")},
}
# Custom calls XLA handles itself (sharding and layout annotations): they
# are no project's target, and HLO text prints them with no api_version.
XLA_OWN = {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "LayoutConstraint",
           "MoveToHost", "MoveToDevice", "annotate_device_placement"}


def source_tree(project: str) -> pathlib.Path:
    """The project's sdist, unpacked in the cache."""
    if project in SOURCES:
        folder, inner = SOURCES[project]
    else:
        suite = project_suites.PROJECTS[project]["suite"]
        folder, inner = suite["folder"], suite.get("inner", "")
    return cached(folder) / inner


EIGEN = pathlib.Path("/usr/include/eigen3")   # Debian's libeigen3-dev


def harmonica_buildable(tree: pathlib.Path) -> None:
    """What planet-harmonica 0.1.1's build needs that its sdist does not
    ship, put in tree: its C++ headers (from its repository,
    tests/fixtures/git_sources.tsv) and Eigen 3.4 at vendor/eigen (the
    system's).  LookupError, saying which, where one is missing."""
    headers = cached("planet-harmonica-0.1.1-repo")
    if not (headers / ".complete").exists():
        raise LookupError("planet-harmonica's sdist has no C++ headers: fetch them with "
                          "`python3 tests/fixtures/fetch.py --git planet-harmonica` "
                          "(git_sources.tsv)")
    if not (EIGEN / "Eigen" / "Core").exists():
        raise LookupError(f"planet-harmonica's build needs Eigen 3.4's headers ({EIGEN}: "
                          "Debian's libeigen3-dev)")
    for header in (headers / "harmonica").rglob("*.hpp"):
        (tree / header.relative_to(headers)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(header, tree / header.relative_to(headers))
    (tree / "vendor").mkdir(exist_ok=True)
    (tree / "vendor" / "eigen").symlink_to(EIGEN)


def pybamm_buildable(tree: pathlib.Path) -> None:
    """pybammsolvers' git submodules, which its sdist does not ship, where
    its build looks for them (beside its CMakeLists.txt, which then builds
    them): SUNDIALS and SuiteSparse's KLU at the commits its repository
    pinned (tests/fixtures/git_sources.tsv).  LookupError where one is not
    in the cache."""
    for name in ("sundials", "SuiteSparse"):
        source = cached(fetch.git_entry(name)["folder"])
        if not (source / ".complete").exists():
            raise LookupError(f"pybammsolvers' build needs its {name} submodule: fetch it with "
                              f"`python3 tests/fixtures/fetch.py --git {name} [CLONE]` "
                              "(git_sources.tsv)")
        shutil.copytree(source, tree / "pybammsolvers" / name,
                        ignore=shutil.ignore_patterns(".complete"))


# What a project's build needs beyond its sdist, added to the patched tree.
BUILDABLE = {"planet-harmonica-0.1.1": harmonica_buildable,
             "pybamm-26.10.1.1": pybamm_buildable}
# What a project's suite imports beside its build, installed with it: the
# cache's folders copied into its site.  sphericart-jax's tests import
# sphericart (the NumPy package of the same release, its own wheel), whose
# package folder sphericart.jax goes into, as pip installs the two.
BESIDE = {"sphericart-jax-1.0.5": ["census/sphericart-jax-1.0.5-sphericart"]}
# What a project's build needs in its environment: kepler_jax's version
# comes from setuptools_scm, which needs a clone's .git; the cache's copy of
# its commit has none, so the version a clone reports is pretended, as its
# census [build] does (dev/census/projects/kepler-jax.toml).
BUILD_ENV = {"kepler-jax-371dca9": {"SETUPTOOLS_SCM_PRETEND_VERSION": "0.1.dev56+g371dca9"}}


def side_by_side(project: str, into: pathlib.Path) -> list[pathlib.Path]:
    """The trees `ccshim port` reads for the project: its sdist's copy in
    into, or, for a project of several trees, their copies side by side
    under into."""
    if project not in TREES:
        shutil.copytree(source_tree(project), into)
        return [into]
    found = []
    for name, (folder, inner) in TREES[project].items():
        shutil.copytree(cached(folder) / inner, into / name)
        found.append(into / name)
    return found


def patched(project: str, into: pathlib.Path) -> pathlib.Path:
    """A copy of the project's sdist (or trees, side by side) in into/tree
    with its kept patch applied (git apply)."""
    tree = into / "tree"
    side_by_side(project, tree)
    patch = KEPT / f"{project}.patch"
    done = subprocess.run(["git", "apply", str(patch)], cwd=tree, capture_output=True,
                          text=True)
    if done.returncode:
        raise RuntimeError(f"git apply {patch.name} failed: {done.stderr.strip()[-600:]}")
    if project in BUILDABLE:
        BUILDABLE[project](tree)
    return tree


def build(tree: pathlib.Path, site: pathlib.Path, python: pathlib.Path = NEWEST,
          timeout: int = 1200, project: str | None = None) -> None:
    """The ported tree built by its own build (its pyproject's backend,
    without build isolation: the build Python has its requirements) into
    site, with what the project's build needs in its environment; a
    project of several trees, each of them."""
    for part in [tree / name for name in TREES[project]] if project in TREES else [tree]:
        done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps",
                               "--no-build-isolation", "--target", str(site), str(part)],
                              capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **BUILD_ENV.get(project, {}),
                                   # scikit-build-core's build folder in the
                                   # tree, where its paths are the same from
                                   # one run to the next (conftest's ccache)
                                   "SKBUILD_BUILD_DIR": str(part / "build"),
                                   # the build venv's tools (mpich's mpicc for
                                   # mpi4jax), as an activated venv has them
                                   "PATH": os.pathsep.join([str(pathlib.Path(python).parent),
                                                            os.environ.get("PATH", "")])})
        if done.returncode:
            raise RuntimeError(f"its build ({part.name}) failed:\n" +
                               (done.stdout + done.stderr)[-3000:])
    for folder in BESIDE.get(project, []):
        shutil.copytree(cached(folder), site, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".complete"))


def site_packages(python: pathlib.Path) -> str:
    return subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                          capture_output=True, text=True, check=True).stdout.strip()


def environment(site: pathlib.Path, python: pathlib.Path, dump: pathlib.Path) -> dict:
    """The environment of a Python started with -S (no site processing:
    make test's venvs put this tree's python/ on the path with a .pth) with
    the built project and the venv's packages on PYTHONPATH, and XLA dumping
    every module it compiles into dump."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CCSHIM_", "PYTHON", "XLA_", "JAX_"))}
    env.update(PYTHONPATH=os.pathsep.join([str(site), site_packages(python)]),
               XLA_FLAGS=f"--xla_dump_to={dump} --xla_dump_hlo_as_text")
    # mpi4py finds the venv's MPI (the mpich wheel's lib/libmpi.so.12) from
    # the venv's prefix, which only site processing gives (mpi4py/_mpiabi.py,
    # _site_prefixes); under -S it would take whatever libmpi the system has
    # or none (veros imports mpi4py).  The folder it would have searched:
    lib = pathlib.Path(python).parent.parent / "lib"
    if any(lib.glob("libmpi.so*")):
        env["MPI4PY_LIBMPI"] = str(lib)
    return env


def custom_call_lines(dump: pathlib.Path) -> list[str]:
    """Every custom-call line of the modules in XLA's dump (--xla_dump_to,
    --xla_dump_hlo_as_text)."""
    return [line for path in sorted(dump.glob("*.txt"))
            for line in path.read_text(errors="replace").splitlines() if " custom-call(" in line]


# What a program run on a ported build starts with: it fails where ccshim
# can be imported (under -S only what environment() puts on the path is).
NO_CCSHIM = """\
import sys
try:
    import ccshim  # noqa: F401
    sys.exit("ccshim imported")
except ImportError:
    pass
"""


def built_run(tree: pathlib.Path, tmp_path: pathlib.Path, name: str, program: str,
              python: pathlib.Path = NEWEST) -> tuple[str, list[str]]:
    """tree built by its own build, and program run on it by python under
    -S, failing where ccshim can be imported (NO_CCSHIM); its output, and
    the custom-call lines of what XLA compiled."""
    site = tmp_path / f"site-{name}"
    build(tree, site, python=python)
    dump = tmp_path / f"hlo-{name}"
    ran = subprocess.run([str(python), "-S", "-c", NO_CCSHIM + program], cwd=tmp_path,
                         env=environment(site, python, dump), capture_output=True, text=True,
                         timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return ran.stdout, custom_call_lines(dump)


def custom_calls(dump: pathlib.Path) -> tuple[dict[str, int], list[str]]:
    """From XLA's dump: each custom-call target's count, and the calls that
    are not typed-FFI ones (XLA's own annotations aside)."""
    counts: dict[str, int] = {}
    untyped = []
    for line in custom_call_lines(dump):
        target = re.search(r'custom_call_target="([^"]+)"', line)
        name = target.group(1) if target else "?"
        counts[name] = counts.get(name, 0) + 1
        if name not in XLA_OWN and "api_version=API_VERSION_TYPED_FFI" not in line:
            untyped.append(line.strip()[:300])
    return counts, untyped


def run(project: str, site: pathlib.Path, python: pathlib.Path, ranks: int = 1,
        timeout: int = 1800, suite=None, why=None) -> dict:
    """The project's suite (or another release's: project_suites.run's
    ``suite``) on its ported build, without ccshim: {"found": {test:
    outcome}, "tail", "calls": {target: count}, "untyped": [...], "ccshim":
    what `import ccshim` said there}; ``why`` gets each failure's message."""
    with tempfile.TemporaryDirectory() as tmp:
        dump = pathlib.Path(tmp) / "hlo"
        env = environment(site, python, dump)
        probe = subprocess.run([str(python), "-S", "-c", "import ccshim"], env=env,
                               capture_output=True, text=True)
        found, tail = project_suites.run(project, env=env, ranks=ranks, timeout=timeout,
                                         python=python, package=site, flags=["-S"],
                                         suite=suite, why=why)
        calls, untyped = custom_calls(dump)
    return {"found": found, "tail": tail, "calls": calls, "untyped": untyped,
            "ccshim": (probe.stderr.strip().splitlines() or ["imported"])[-1]}


def conform(project: str, site: pathlib.Path, python: pathlib.Path, ccshim: pathlib.Path,
            entries: list[dict], into: pathlib.Path, runs_in: pathlib.Path | None = None) -> dict:
    """`ccshim conform --against-python` of each ported kernel named in
    entries (the manifest's [port] conform), the handler of the ported build
    in site against the kernel of the project's legacy build (its sdist
    unpatched, built the same way into into, with python) run by XLA's
    legacy path, each side in runs_in (the suite's Python; else python):
    {name: {"status", "runs", "equal", "both_failed", "detail"}}.  An entry
    has name (target: its key in the mapping, when not the name), api,
    signature, arg_hex, arg_from (`--arg-from`: a value each side's process
    makes, by a function of the state module), and where the capsules are:

    * module: a path in each build (the module loaded from its file), or a
      name imported on each side from its own build;
    * state: instead, a module of dev/census/state/ that makes the state
      the project's Python makes before its kernels run (tfc's basis
      objects), imported on each side with its own build on the path;
    * attr: the module's mapping (registrations by default), or function:
      its function that returns the capsule;
    * restore_jax: the legacy build imported with the JAX names zero-change
      mode restores (one this JAX no longer imports)."""
    legacy = into / "legacy-site"
    tree = into / "legacy-tree"
    side_by_side(project, tree)
    if project in BUILDABLE:
        BUILDABLE[project](tree)
    build(tree, legacy, python, project=project)
    found = {}
    for e in entries:
        if "state" in e:  # one module of ours, each side's build on its path
            modules = [str(STATE / e["state"])] * 2
            paths = ["--python-path", str(legacy), "--against-path", str(site)]
        elif "/" in e["module"]:  # a path in each build, the module loaded from its file
            modules = [next(iter(sorted(s.glob(e["module"] + "*.so"))), None)
                       for s in (legacy, site)]
            paths = []
        else:  # a module name, imported on each side from its own build
            modules = [e["module"]] * 2
            paths = ["--python-path", str(legacy), "--against-path", str(site)]
        if None in modules:
            found[e["name"]] = {"status": "error", "detail": f"no {e['module']}*.so in a build"}
            continue
        # the module's mapping of its capsules (registrations by default), or
        # the module function that returns the kernel's (celerite2's)
        attr = e.get("function") or e.get("attr", "registrations")
        named = [] if "function" in e else [e.get("target", e["name"])]
        args = [str(ccshim), "conform", "--python", f"{modules[0]}:{attr}", *named,
                "--api", str(e["api"]), "--signature", e["signature"], "--reference", "xla",
                "--against-python", f"{modules[1]}:{attr}", *paths,
                *(["--restore-jax"] if e.get("restore_jax") else []),
                *(["--against-name", named[0]] if named else []), "--runs", "3", "--json"]
        for fixed in e.get("arg_hex", []):
            args += ["--arg-hex", fixed]
        for made in e.get("arg_from", []):
            args += ["--arg-from", made]
        # the Python of the project's suite (its modules), ccshim's package
        # reachable there from this tree (after each side's build)
        pythonpath = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"),
                                                   str(ROOT / "python")]))
        done = subprocess.run(args, env=dict(os.environ, CCSHIM_PYTHON=str(runs_in or python),
                                             PYTHONPATH=pythonpath),
                              capture_output=True, text=True, timeout=600)
        try:
            (target,) = json.loads(done.stdout)["targets"]
        except (ValueError, KeyError):
            found[e["name"]] = {"status": "error", "detail": (done.stdout + done.stderr)[-300:]}
            continue
        found[e["name"]] = {k: target.get(k) for k in ("status", "runs", "equal",
                                                       "both_failed", "detail")}
    return found
