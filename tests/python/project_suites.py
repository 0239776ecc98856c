"""A released project's own test suite, run as published, and its outcome
per test.

    project_suites.py baseline PROJECT OUT.json

runs PROJECT's suite on XLA's legacy path in the running Python (a JAX that
still imports the project; tests/fixtures/make_project_baselines.sh makes
that venv) and writes each test's outcome: the committed reference that
test_projects_own_suites.py holds ccshim to.  Standard library only: it
runs in old JAX releases' venvs.

A suite's tests are copied out of the project's sdist (or, where it has
none there, its repository: REPOSITORY_ONLY), in the per-user cache, into
a fresh folder, so that nothing of the project's tree is on the
path but its installed package; the copy is not edited.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from project_modules import cached  # noqa: E402

# PROJECT -> its installed package's folder in the cache, by Python ABI;
# where its suite comes from (a folder in the cache, the folder inside, what
# of it the suite needs, copied as published: never the project's unbuilt
# package) and what pytest is given; the MPI ranks it runs on; the legacy
# targets its suite runs (through ccshim, each then a ccshim.vN target); and
# which of its tests reach its kernels (a test id prefix), which without
# ccshim do not pass from the JAX release given (None: none stops it).
SUITES = {
    "celerite2-0.3.2": {
        # the wheel for CPython 3.11 (the folder other tests read) and 3.12
        "package": lambda abi: cached("celerite2-0.3.2" if abi == "cp311"
                                      else f"celerite2-0.3.2-{abi}"),
        "suite": ("celerite2-0.3.2-src", "celerite2-0.3.2/python/test", ["jax"]),
        "pytest": ["jax"],
        "ranks": (1,),
        "targets": [f"celerite2_{op}{rev}" for op in ("factor", "solve_lower", "solve_upper",
                                                      "matmul_lower", "matmul_upper")
                    for rev in ("", "_rev")] + ["celerite2_general_matmul_lower",
                                                "celerite2_general_matmul_upper"],
        "kernels": ("", (0, 6, 0)),  # register_custom_call_target, jax.core.Primitive
    },
    "exoplanet-core-0.3.1": {
        "package": lambda abi: cached("exoplanet-core-0.3.1" if abi == "cp311"
                                      else f"exoplanet-core-0.3.1-{abi}"),
        "suite": ("exoplanet-core-0.3.1-src", "exoplanet_core-0.3.1", ["tests"]),
        "pytest": ["tests"],  # as its noxfile runs it
        "ranks": (1,),
        "targets": ["solve_kepler", "quad_solution_vector", "contact_points"],
        # its JAX tests; the rest test its NumPy and C++ ops.  From 0.6.0 its
        # JAX ops do not import (register_custom_call_target) and the tests skip.
        "kernels": ("tests.jax_test::", (0, 6, 0)),
    },
    "jax-finufft-0.1.0": {
        # the wheel for CPython 3.11 and the abi3 one for 3.12
        "package": lambda abi: cached("jax-finufft-0.1.0" if abi == "cp311"
                                      else f"jax-finufft-0.1.0-{abi}"),
        "suite": ("jax-finufft-0.1.0-src", "jax_finufft-0.1.0", ["tests"]),
        "pytest": ["tests"],
        "requires": ["pydantic", "absl"],  # its requirement; JAX's test_util's
        "ranks": (1,),
        "targets": [f"nufft{d}d{t}{f}" for d in (1, 2, 3) for t in (1, 2) for f in ("", "f")],
        "kernels": ("tests.ops_test::", (0, 6, 0)),  # jax.core.Primitive
        # What its own code uses that later JAX removed, not custom-call
        # plumbing and not restored: from that release a test that fails with
        # that message is not held against ccshim (none of its tests that
        # reach the kernels runs there) ...
        "removed": [((0, 7, 0), "As of JAX v0.7, parameters to jaxpr equations must have "
                                "__hash__ and __eq__ methods"),  # its bind's ndarray params
                    ((0, 9, 0), "jax.experimental.enable_x64 was removed in JAX 0.9.0; "
                                "ccshim.legacy does not restore it")],
        # ... so it also runs on the newest JAX that has what it uses, in a
        # venv of the cache's (dev/setup.sh), where every test is held.
        "also_on": ("0.6.2", "venv-jax-0.6.2"),
    },
    "mpi4jax-0.8.1.post2": {
        # built by dev/setup.sh per ABI, against its venv's mpich and mpi4py
        "package": lambda abi: cached(f"mpi4jax-0.8.1.post2-build-{abi}"),
        "suite": ("mpi4jax-0.8.1.post2-src", "mpi4jax-0.8.1.post2",
                  ["pyproject.toml", "tests", "examples"]),
        "pytest": ["tests"],
        "requires": ["mpi4py"],
        "ranks": (1, 2),
        "targets": [f"mpi_{op}" for op in ("allgather", "allreduce", "alltoall", "barrier",
                                           "bcast", "gather", "reduce", "scan", "scatter",
                                           "sendrecv")],
        "kernels": ("", (0, 10, 0)),  # jax.core.get_aval
    },
    "veros-1.7.0": {
        # built by dev/setup.sh per ABI; its suite is not in its sdist, but in
        # its repository (git_sources.tsv), fetched by hand: see REPOSITORY_ONLY
        "package": lambda abi: cached(f"veros-1.7.0-build-{abi}"),
        "suite": ("veros-1.7.0-tests", "", ["test"]),
        # its suite on its JAX backend.  Not test/distributed: its tests start
        # their MPI ranks with MPI_Comm_spawn from a rank that no mpiexec
        # started, which hangs under mpich's singleton init until each test's
        # 300 s timeout; left out of every run alike, the baseline's too
        "pytest": ["test", "--backend", "jax", "--ignore=test/distributed"],
        "requires": ["h5netcdf", "loguru", "click", "tqdm", "requests", "PIL", "entrypoints"],
        "ranks": (1,),
        "targets": ["tdma_cython_double"],
        # None: its own code uses nothing JAX has removed (jax.ffi's
        # registration, jax._src's custom_call), and XLA:CPU of 0.12.0.1 still
        # runs its api_version 2 calls (logging that they are unsupported), so
        # no JAX here stops it without ccshim; what shows ccshim ran it is
        # strict mode and the report's tdma target.
        "kernels": None,
    },
}

# Suites published only in a project's repository: the git_sources.tsv entry
# that fetches each (tests/fixtures/fetch.py --git NAME).
REPOSITORY_ONLY = {"veros-1.7.0": "veros"}


def suite_folder(project: str, into: pathlib.Path) -> None:
    """What the project's suite needs of its sdist (or repository), copied
    as published."""
    folder, inner, parts = SUITES[project]["suite"]
    for part in parts:
        src = cached(folder) / inner / part
        (shutil.copytree if src.is_dir() else shutil.copy)(src, into / part)


def abi(python=None) -> str:
    """The CPython ABI tag ("cp311") of ``python`` (default: this one)."""
    if python is None or pathlib.Path(python) == pathlib.Path(sys.executable):
        return "cp%d%d" % sys.version_info[:2]
    return subprocess.run([str(python), "-c", "import sys; print('cp%d%d' % sys.version_info[:2])"],
                          capture_output=True, text=True, check=True).stdout.strip()


def missing_modules(project: str, python) -> list:
    """The modules the project's suite needs (SUITES' "requires", beside
    JAX and pytest) that ``python`` cannot import."""
    wanted = SUITES[project].get("requires", [])
    code = ("import importlib.util, sys; print(' '.join(m for m in sys.argv[1:] "
            "if importlib.util.find_spec(m) is None))")
    return subprocess.run([str(python), "-c", code, *wanted], capture_output=True, text=True,
                          check=True).stdout.split()


def excused(project: str, jax_version: tuple, message: str) -> bool:
    """Whether a test failing with ``message`` on that JAX fails for what the
    project's own code uses that JAX removed (SUITES' "removed")."""
    return any(jax_version >= since and text in message
               for since, text in SUITES[project].get("removed", ()))


def run(project: str, prefix=(), env=None, ranks=1, timeout=1200, why=None, python=None):
    """Runs the suite on ``ranks`` MPI ranks (1: no mpiexec) with ``prefix +
    [..., python, -m, pytest, ...]`` (default: this Python) and the
    project's package for that Python on PYTHONPATH; returns ({test id:
    "passed" | "failed" | "error" | "skipped"}, pytest's tail).  On several
    ranks a test passed only where it passed on every rank."""
    python = str(python or sys.executable)
    package = SUITES[project]["package"](abi(python))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        suite_folder(project, tmp)
        env = dict(os.environ if env is None else env)
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [env.get("PYTHONPATH"), str(package)]))
        pytest = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                  "-o", "junit_family=xunit2", *SUITES[project]["pytest"]]
        if ranks == 1:
            cmd = [*prefix, *pytest, "--junitxml=report-0.xml"]
        else:  # each rank its own report (mpich names the rank PMI_RANK)
            mpiexec = pathlib.Path(python).parent / "mpiexec"
            cmd = [*prefix, str(mpiexec), "-n", str(ranks), "sh", "-c",
                   'exec "$@" "--junitxml=report-$PMI_RANK.xml"', "sh", *pytest]
        p = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True,
                           timeout=timeout)
        tail = (p.stdout + p.stderr)[-4000:]
        reports = [tmp / f"report-{r}.xml" for r in range(ranks)]
        if not all(r.exists() for r in reports):
            raise RuntimeError(f"{project}: pytest wrote no report (exit {p.returncode}):\n{tail}")
        found = {}
        for report in reports:
            for test, outcome in outcomes(report, why).items():
                if found.get(test, "passed") == "passed":
                    found[test] = outcome
        return found, tail


def outcomes(report: pathlib.Path, why: dict | None = None) -> dict:
    """JUnit XML -> {classname::name: outcome}; ``why`` gets, for each test
    that did not pass, the first line of pytest's message."""
    found = {}
    for case in ET.parse(report).iter("testcase"):
        key = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag: child for child in case}
        found[key] = ("failed" if "failure" in kinds else "error" if "error" in kinds
                      else "skipped" if "skipped" in kinds else "passed")
        if why is not None and found[key] != "passed":
            child = kinds.get("failure", kinds.get("error", kinds.get("skipped")))
            why[key] = (child.get("message") or "").splitlines()[0][:300] if child is not None \
                else ""
    return found


def main(argv):
    if len(argv) != 3 or argv[0] != "baseline":
        print(__doc__, file=sys.stderr)
        return 2
    project, out = argv[1], pathlib.Path(argv[2])
    import jax
    import jaxlib
    runs = {}
    for ranks in SUITES[project]["ranks"]:
        why = {}
        found, tail = run(project, ranks=ranks, why=why)
        counts = {k: sum(1 for v in found.values() if v == k)
                  for k in ("passed", "failed", "error", "skipped")}
        runs[str(ranks)] = {"counts": counts, "tests": dict(sorted(found.items())),
                            "why": dict(sorted(why.items()))}
        print(f"{project} on JAX {jax.__version__}, {ranks} rank(s): {counts}")
    out.write_text(json.dumps({
        "project": project, "path": "XLA's legacy path (no ccshim)",
        "jax": jax.__version__, "jaxlib": jaxlib.__version__,
        "python": "%d.%d" % sys.version_info[:2], "runs": runs}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
