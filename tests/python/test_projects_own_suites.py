"""Released projects' own test suites, as published and with nothing of
theirs edited, run on today's JAX through `ccshim legacy --strict -- python
-m pytest` (issue 28): the same tests pass as on XLA's legacy path of a JAX
that still imports the project (tests/fixtures/projects/, made once by
tests/fixtures/make_project_baselines.sh), and in strict mode no legacy
call reaches XLA.  Without ccshim, the same suite does not get as far as
its kernels on today's JAX."""

import json
import os
import sys

import pytest

from conftest import BUILD, FIXTURES, fixture_missing
import project_suites


def _through_ccshim(project, ranks):
    env = {**os.environ, "CCSHIM_PYTHON": sys.executable}
    return project_suites.run(project, prefix=[str(BUILD / "tools" / "ccshim"), "legacy",
                                               "--strict", "--"], env=env, ranks=ranks)


@pytest.mark.parametrize("project, ranks", [
    pytest.param(project, ranks, id=f"{project}-{ranks}rank{'s' if ranks > 1 else ''}")
    for project, suite in sorted(project_suites.SUITES.items()) for ranks in suite["ranks"]])
def test_a_projects_own_suite_passes_through_ccshim_as_on_xlas_legacy_path(project, ranks):
    package = project_suites.SUITES[project]["package"](project_suites.abi())
    if not (package / ".complete").exists():
        fixture_missing(f"{project}'s package for {project_suites.abi()} ({package.name})")
    baseline = json.loads((FIXTURES / "projects" / f"{project}.json").read_text())
    there = baseline["runs"][str(ranks)]
    found, tail = _through_ccshim(project, ranks)
    passed_there = sorted(t for t, o in there["tests"].items() if o == "passed")
    assert passed_there, there["counts"]
    lost = {t: found.get(t, "not run") for t in passed_there if found.get(t) != "passed"}
    assert not lost, f"passed on JAX {baseline['jax']}'s legacy path, not here: {lost}\n{tail}"
    assert sorted(found) == sorted(there["tests"]), tail  # the same tests ran

    # Without ccshim the suite does not reach its kernels on a JAX that
    # removed what the project uses.
    import jax
    if tuple(map(int, jax.__version__.split(".")[:3])) >= project_suites.SUITES[project][
            "stopped_from"]:
        without, tail = project_suites.run(project, ranks=ranks)
        assert not any(o == "passed" for o in without.values()), tail
