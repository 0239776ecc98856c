"""A released project's own test suite, run as published, and its outcome
per test.

    project_suites.py baseline PROJECT OUT.json

runs PROJECT's suite on XLA's legacy path in the running Python (a JAX that
still imports the project; dev/census/census.py baseline makes
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

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from project_modules import cached  # noqa: E402

# The census's manifest (dev/census/projects/*.toml): for each project, its
# package's folder in the cache by Python ABI, where its suite comes from
# and what pytest is given, the MPI ranks it runs on, the legacy targets its
# suite runs, which of its tests reach its kernels and from which JAX they
# do not pass without ccshim, and what of its own code later JAX removed.
sys.path.insert(0, str(ROOT / "dev" / "census"))
import manifest  # noqa: E402

PROJECTS = {key: p for key, p in manifest.projects().items() if p["status"] == "runs"}


def _suite(p: dict) -> dict:
    """A manifest entry as run() and the tests read it."""
    stopped = p.get("stopped_from")
    return {
        "package": lambda abi, p=p: cached(p["package"][abi]) if abi in p["package"] else
        pathlib.Path(f"<{p['key']} has no package for {abi}>"),
        "suite": (p["suite"]["folder"], p["suite"].get("inner", ""), p["suite"]["parts"]),
        "pytest": p["suite"]["pytest"],
        "requires": p.get("requires", []),
        "ranks": tuple(p.get("ranks", [1])),
        "targets": p.get("targets", []),
        "kernels": (p.get("reaching", ""), manifest.jax_version(stopped)) if stopped else None,
        "removed": [(manifest.jax_version(rule["since"]), rule["message"])
                    for rule in p.get("lost", []) if rule.get("excused")],
        "quick": p.get("quick", False),
        "quick_ranks": tuple(p.get("quick_ranks", p.get("ranks", [1]))),
        # its runs are in make test's own venvs (pinned, newest): make
        # test-projects runs it there
        "in_test_venvs": any("venv" in run for run in p["runs"]),
    }


SUITES = {key: _suite(p) for key, p in PROJECTS.items()}

# Suites published only in a project's repository: the git_sources.tsv entry
# that fetches each (tests/fixtures/fetch.py --git NAME).
REPOSITORY_ONLY = {key: p["suite"]["git"] for key, p in PROJECTS.items()
                   if isinstance(p["suite"].get("git"), str)}


def suite_folder(project: str, into: pathlib.Path, suite=None) -> None:
    """What the project's suite needs of its sdist (or repository), copied
    as published; ``suite`` as run() takes it."""
    folder, inner, parts = suite or SUITES[project]["suite"]
    for part in parts:
        src = cached(folder) / inner / part
        (into / part).parent.mkdir(parents=True, exist_ok=True)
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


def through_ccshim(report, python: pathlib.Path, build: pathlib.Path) -> dict:
    """run()'s prefix, env and Python for a run through `ccshim legacy
    --strict` (with --report REPORT unless None): the ccshim of this tree
    and its build, also from a venv of the cache's shared by clones."""
    env = {**os.environ, "CCSHIM_PYTHON": str(python), "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "python"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    env.setdefault("CCSHIM_LIBRARY", str(build / "libccshim.so"))
    report_args = ["--report", str(report)] if report is not None else []
    return {"prefix": [str(build / "tools" / "ccshim"), "legacy", "--strict", *report_args,
                       "--"], "env": env, "python": python}


def report_lines(path: pathlib.Path) -> list[dict]:
    """The file of `ccshim legacy --report`, a dict a line (none when the
    file was not made); its fields are ccshim's REPORT_FIELDS."""
    from ccshim._legacy_cmd import REPORT_FIELDS  # ccshim.legacy's import would turn the mode on
    return [dict(zip(REPORT_FIELDS, line.split("\t")))
            for line in path.read_text().splitlines()] if path.exists() else []


def counts(found: dict) -> dict:
    """A run's {test: outcome} counted by outcome."""
    return {k: sum(1 for v in found.values() if v == k)
            for k in ("passed", "failed", "error", "skipped")}


def run(project: str, prefix=(), env=None, ranks=1, timeout=1200, why=None, python=None,
        package=None, flags=(), suite=None):
    """Runs the suite on ``ranks`` MPI ranks (1: no mpiexec) with ``prefix +
    [..., python, *flags, -m, pytest, ...]`` (default: this Python) and the
    project's package for that Python (or ``package``: a port's build) on
    PYTHONPATH; returns ({test id: "passed" | "failed" | "error" |
    "skipped"}, pytest's tail).  On several ranks a test passed only where
    it passed on every rank.  ``suite``: another release's suite of the
    project instead of the manifest's, as (cache folder, inner, parts)."""
    python = str(python or sys.executable)
    package = package or SUITES[project]["package"](abi(python))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        suite_folder(project, tmp, suite)
        env = dict(os.environ if env is None else env)
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [env.get("PYTHONPATH"), str(package)]))
        pytest = [python, *flags, "-m", "pytest", "-q", "-p", "no:cacheprovider",
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
        found, tail = run(project, ranks=ranks, why=why,
                          timeout=int(os.environ.get("CCSHIM_SUITE_TIMEOUT", 1200)))
        counted = counts(found)
        runs[str(ranks)] = {"counts": counted, "tests": dict(sorted(found.items())),
                            "why": dict(sorted(why.items()))}
        print(f"{project} on JAX {jax.__version__}, {ranks} rank(s): {counted}")
    out.write_text(json.dumps({
        "project": project, "path": "XLA's legacy path (no ccshim)",
        "jax": jax.__version__, "jaxlib": jaxlib.__version__,
        "python": "%d.%d" % sys.version_info[:2], "runs": runs}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
