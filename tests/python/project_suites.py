"""A released project's own test suite, run as published, and its outcome
per test.

    project_suites.py baseline PROJECT OUT.json

runs PROJECT's suite on XLA's legacy path in the running Python (a JAX that
still imports the project; tests/fixtures/make_project_baselines.sh makes
that venv) and writes each test's outcome: the committed reference that
test_projects_own_suites.py holds ccshim to.  Standard library only: it
runs in old JAX releases' venvs.

A suite's tests are copied out of the project's sdist (in the per-user
cache) into a fresh folder, so that nothing of the project's tree is on the
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
# the sdist folder in the cache, its folder inside, what of it the suite
# needs (copied as published: never the project's unbuilt package) and
# what pytest is given; the MPI ranks it runs on; the first JAX whose
# removals stop it without ccshim.
SUITES = {
    "celerite2-0.3.2": {
        # the wheel for CPython 3.11 (the folder other tests read) and 3.12
        "package": lambda abi: cached("celerite2-0.3.2" if abi == "cp311"
                                      else f"celerite2-0.3.2-{abi}"),
        "sdist": ("celerite2-0.3.2-src", "celerite2-0.3.2/python/test", ["jax"]),
        "pytest": ["jax"],
        "ranks": (1,),
        "stopped_from": (0, 6, 0),  # register_custom_call_target, jax.core.Primitive
    },
    "mpi4jax-0.8.1.post2": {
        # built by dev/setup.sh per ABI, against its venv's mpich and mpi4py
        "package": lambda abi: cached(f"mpi4jax-0.8.1.post2-build-{abi}"),
        "sdist": ("mpi4jax-0.8.1.post2-src", "mpi4jax-0.8.1.post2",
                  ["pyproject.toml", "tests", "examples"]),
        "pytest": ["tests"],
        "ranks": (1, 2),
        "stopped_from": (0, 10, 0),  # jax.core.get_aval
    },
}


def suite_folder(project: str, into: pathlib.Path) -> None:
    """What the project's suite needs of its sdist, copied as published."""
    folder, inner, parts = SUITES[project]["sdist"]
    for part in parts:
        src = cached(folder) / inner / part
        (shutil.copytree if src.is_dir() else shutil.copy)(src, into / part)


def abi() -> str:
    return "cp%d%d" % sys.version_info[:2]


def run(project: str, prefix=(), env=None, ranks=1, timeout=1200, why=None):
    """Runs the suite on ``ranks`` MPI ranks (1: no mpiexec) with ``prefix +
    [..., this Python, -m, pytest, ...]`` and the project's package for this
    Python on PYTHONPATH; returns ({test id: "passed" | "failed" | "error" |
    "skipped"}, pytest's tail).  On several ranks a test passed only where
    it passed on every rank."""
    package = SUITES[project]["package"](abi())
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        suite_folder(project, tmp)
        env = dict(os.environ if env is None else env)
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [env.get("PYTHONPATH"), str(package)]))
        pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                  "-o", "junit_family=xunit2", *SUITES[project]["pytest"]]
        if ranks == 1:
            cmd = [*prefix, *pytest, "--junitxml=report-0.xml"]
        else:  # each rank its own report (mpich names the rank PMI_RANK)
            mpiexec = pathlib.Path(sys.executable).parent / "mpiexec"
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
