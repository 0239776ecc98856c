#!/usr/bin/env bash
# The Python suite (tests/python) against a spread of JAX releases, each in
# its own venv (.venv-matrix/VERSION), on the library built in BUILD; prints
# a Markdown table of what passed, failed and skipped (and why), and writes
# it to docs/jax-matrix.md.  `make test-matrix` runs it; it downloads each
# JAX once.  VERSION@PY runs that JAX on Python PY (JAX 0.11 and later need
# Python 3.12): found as pythonPY on PATH or in pyenv, else the row says so.
#
# usage: dev/test_matrix.sh [BUILD_DIR] [VERSION[@PY]...]
set -u
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
shift || true
versions=("$@")
[ ${#versions[@]} -gt 0 ] ||
  versions=(0.4.35 0.5.3 0.6.2 0.7.2 0.8.3 0.9.2 0.10.2 0.11.2@3.12 0.12.0.1@3.12)
out=docs/jax-matrix.md

. dev/pythons.sh

rows=()
for spec in "${versions[@]}"; do
  v=${spec%@*}
  py=python3
  [ "$spec" != "$v" ] && py=$(python_of "${spec#*@}")
  label="$v (Python ${spec#*@})"
  [ "$spec" = "$v" ] && label="$v (Python $(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])'))"
  if [ -z "$py" ]; then
    rows+=("| $label | not run | no Python ${spec#*@} on this machine |")
    continue
  fi
  venv=.venv-matrix/$spec
  mkdir -p .venv-matrix
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import jax, pytest, flatbuffers" 2>/dev/null; then
    "$py" -m venv "$venv" >"$venv.log" 2>&1 &&
      "$venv/bin/python" -m pip install -q --disable-pip-version-check \
        "jax==$v" "jaxlib==$v" pytest flatbuffers scipy >"$venv.log" 2>&1 ||
      { rows+=("| $label | not installable here | $(tail -n 1 "$venv.log" 2>/dev/null) |"); continue; }
  fi
  add_source_path "$venv" "$PWD/python"
  log=.venv-matrix/$spec.pytest.log
  COLUMNS=400 CCSHIM_BUILD_DIR=$build "$venv/bin/python" -m pytest -q -p no:cacheprovider \
    -rfEs tests/python >"$log" 2>&1
  rows+=("| $label | $(python3 dev/matrix_row.py "$log" "$PWD" "$build") |")
done
{
  echo "| JAX | tests/python | what failed or skipped, and why |"
  echo "|---|---|---|"
  printf '%s\n' "${rows[@]}"
} | tee "$out"
