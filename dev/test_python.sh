#!/usr/bin/env bash
# The Python suite on the pinned JAX (.venv) and on the newest JAX
# (.venv-newest, Python 3.12), so that what breaks on today's JAX cannot
# land.  The two runs share nothing but the build, and much of their time
# is spent waiting on compiles and child processes, so they run side by
# side; each one's report is printed whole when both are done.  A test that
# proves nothing more on a second JAX reads CCSHIM_SUITE (pinned, newest)
# and runs in one of them; one that reads and writes source only (ccshim
# port's patches), or runs all it runs on .venv-newest's Python, is marked
# once and runs in one of them, the pinned unless it names the newest
# (tests/python/conftest.py), so that the two take about as long.
#
# usage: dev/test_python.sh BUILD_DIR [PYTEST_PATH...]  (default: tests/python)
set -u
cd "$(dirname "$0")/.."
build=$(cd "$1" && pwd)
shift
paths=("${@:-tests/python}")
runs=() pids=()
# The compilers the tests' builds start go through ccache where there is
# one (tests/python/conftest.py, _compilers_through_ccache).
CCSHIM_TEST_CCACHE=$(command -v ccache || true)
export CCSHIM_TEST_CCACHE
for venv in .venv .venv-newest; do
  if ! "$venv/bin/python" -c 'import pytest, jax' 2>/dev/null; then
    echo "SKIPPED: the Python suite in $venv (no pytest and JAX there: no Python 3.12" \
      "for .venv-newest? dev/setup.sh said which)"
    continue
  fi
  log=$build/pytest${venv#.venv}.log
  suite=pinned
  [ "$venv" = .venv ] || suite=newest
  CCSHIM_SUITE=$suite CCSHIM_BUILD_DIR=$build "$venv/bin/python" -m pytest -q -p no:cacheprovider \
    --durations=10 "${paths[@]}" >"$log" 2>&1 &
  runs+=("$venv") pids+=($!)
done
status=0
for i in "${!runs[@]}"; do
  wait "${pids[$i]}"
  rc=$?
  venv=${runs[$i]}
  echo "== the Python suite in $venv ($("$venv/bin/python" -c 'import jax, sys; print("JAX", jax.__version__, "on Python", sys.version.split()[0])'))"
  cat "$build/pytest${venv#.venv}.log"
  [ $rc = 0 ] || status=$rc
done
exit $status
