"""Released projects' own test suites, as published and with nothing of
theirs edited, run on today's JAX through `ccshim legacy --strict --report
FILE -- python -m pytest` (issue 28): the same tests pass as on XLA's legacy
path of a JAX that still imports the project (tests/fixtures/projects/,
made once by dev/census/census.py baseline); in strict mode no
legacy call reaches XLA, and the report shows the project's kernels ran
through ccshim's typed targets.  Without ccshim, the tests that reach the
kernels do not pass on a JAX that removed what the project uses (where one
does: veros's own code runs unchanged on every JAX here).

The projects are the census's (dev/census/projects/*.toml) that run in
make test's own venvs: make test runs the quick ones (quick = true, on
their quick_ranks), make test-projects all of them on all their ranks; the
census runs every project (make census, docs/census.md).  A project whose own code uses general JAX API removed
since, which ccshim.legacy does not restore, may have tests excused here,
only when they fail with JAX's message for that removal (the manifest's
[[lost]] rules marked excused); none is today."""

import json
import os
import pathlib
import sys

import pytest

from conftest import BUILD, CACHE, FIXTURES, fixture_missing, left_to_test_projects
import project_suites


def _places():
    """(project, ranks, Python, its JAX release) for each run: every suite
    on the running JAX."""
    import jax
    running = tuple(map(int, jax.__version__.split(".")[:3]))
    # make test runs them on the newest JAX, the one they are for; on the
    # pinned one, make test-projects and make census do (their time would
    # take make test past its budget).
    marks = [pytest.mark.skip(reason="make test runs the projects' suites on the newest JAX; "
                                     "make test-projects and make census on this one")] \
        if left_to_test_projects() else []
    every = bool(os.environ.get("CCSHIM_TEST_PROJECTS"))
    for project, suite in sorted(project_suites.SUITES.items()):
        # make test: its quick rows of the census on their quick ranks, and
        # veros's, which skips there; make test-projects: every row whose
        # runs are in make test's venvs, on all its ranks (make census: all)
        if every:
            if not suite["in_test_venvs"]:
                continue
            ranks_run = suite["ranks"]
        elif suite["quick"] or project in project_suites.REPOSITORY_ONLY:
            ranks_run = suite["quick_ranks"]
        else:
            continue
        for ranks in ranks_run:
            name = f"{project}-{ranks}rank{'s' if ranks > 1 else ''}"
            yield pytest.param(project, ranks, pathlib.Path(sys.executable), running, id=name,
                               marks=marks)


def _present(project, python):
    """Skips (or, under make test, fails) unless the project's package and
    suite are in the cache; a suite only in the project's repository skips
    with how to fetch it, since the set-up does not (it may not reach it)."""
    name = project_suites.REPOSITORY_ONLY.get(project)
    if name is not None and not os.environ.get("CCSHIM_TEST_PROJECTS"):
        pytest.skip(f"{project}'s own suite runs in make test-projects, which fetches it from "
                    "its repository first (it takes make test past its time budget)")
    if not python.exists():
        fixture_missing(f"{python} (the venv {project}'s suite also runs in)")
    missing = project_suites.missing_modules(project, python)
    if missing:  # the set-up installs them in the venvs make test uses
        fixture_missing(f"{project}'s suite needs {', '.join(missing)}, not in {python}")
    abi = project_suites.abi(python)
    package = project_suites.SUITES[project]["package"](abi)
    if not (package / ".complete").exists():
        fixture_missing(f"{project}'s package for {abi} ({package.name})")
    folder = project_suites.SUITES[project]["suite"][0]
    if not (CACHE / folder / ".complete").exists():
        if name is None:
            fixture_missing(f"{project}'s suite ({folder})")
        pytest.skip(f"{project}'s own suite is published only in its repository: fetch it "
                    f"with `python3 tests/fixtures/fetch.py --git {name}` (git_sources.tsv)")


def _kernels_reached(report):
    """The report's lines -> {legacy target: typed target}; every typed
    target one of ccshim's."""
    lines = project_suites.report_lines(report)
    assert all(f["typed"] == f"ccshim.v{f['api_version']}.{f['target']}" for f in lines), lines
    return {f["target"]: f["typed"] for f in lines}


@pytest.mark.parametrize("project, ranks, python, jax_version", list(_places()))
def test_a_projects_own_suite_passes_through_ccshim_as_on_xlas_legacy_path(
        project, ranks, python, jax_version, tmp_path):
    _present(project, python)
    suite = project_suites.SUITES[project]
    baseline = json.loads((FIXTURES / "projects" / f"{project}.json").read_text())
    there = baseline["runs"][str(ranks)]
    report = tmp_path / "report.tsv"
    why = {}
    found, tail = project_suites.run(project,
                                     **project_suites.through_ccshim(report, python, BUILD),
                                     ranks=ranks, why=why)
    passed_there = sorted(t for t, o in there["tests"].items() if o == "passed")
    assert passed_there, there["counts"]
    lost = {t: found.get(t, "not run") for t in passed_there if found.get(t) != "passed"}
    excused = {t for t in lost if project_suites.excused(project, jax_version, why.get(t, ""))}
    held = {t: (o, why.get(t)) for t, o in lost.items() if t not in excused}
    assert not held, f"passed on JAX {baseline['jax']}'s legacy path, not here: {held}\n{tail}"
    assert sorted(found) == sorted(there["tests"]), tail  # the same tests ran
    reached = _kernels_reached(report)
    if not excused:  # where tests are excused, those reaching the kernels may be among them
        assert set(suite["targets"]) <= set(reached), (suite["targets"], reached)

    # Without ccshim, the tests that reach the kernels do not pass on a JAX
    # that removed what the project uses.
    prefix, stopped_from = suite["kernels"] or ("", None)
    if stopped_from is not None and jax_version >= stopped_from:
        plain = {k: v for k, v in os.environ.items() if not k.startswith("CCSHIM_LEGACY")}
        without, tail = project_suites.run(project, ranks=ranks, python=python, env=plain)
        reaching = [t for t in passed_there if t.startswith(prefix)]
        assert reaching, prefix
        assert not [t for t in reaching if without.get(t) == "passed"], tail
