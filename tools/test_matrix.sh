#!/usr/bin/env bash
# The Python suite (tests/python) against a spread of JAX releases, each in
# its own venv (.venv-matrix/VERSION), on the library built in BUILD; prints
# a Markdown table of what passed, failed and skipped (and why), and writes
# it to docs/jax-matrix.md.  `make test-matrix` runs it; it downloads each
# JAX once.
#
# usage: tools/test_matrix.sh [BUILD_DIR] [VERSION...]
set -u
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
shift || true
versions=("$@")
[ ${#versions[@]} -gt 0 ] ||
  versions=(0.4.35 0.4.38 0.5.3 0.6.2 0.7.2 0.8.3 0.9.2 0.10.2)
python=${PYTHON:-python3}
out=docs/jax-matrix.md
rows=()
for v in "${versions[@]}"; do
  venv=.venv-matrix/$v
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import jax, pytest, flatbuffers" 2>/dev/null; then
    "$python" -m venv "$venv" &&
      "$venv/bin/python" -m pip install -q --disable-pip-version-check \
        "jax==$v" "jaxlib==$v" pytest flatbuffers >"$venv.log" 2>&1 ||
      { rows+=("| $v | not installable here | $(tail -n 1 "$venv.log" 2>/dev/null) |"); continue; }
  fi
  site=$("$venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')
  echo "$PWD/python" >"$site/ccshim-source.pth"
  log=.venv-matrix/$v.pytest.log
  COLUMNS=400 CCSHIM_BUILD_DIR=$build "$venv/bin/python" -m pytest -q -p no:cacheprovider \
    -rfEs tests/python >"$log" 2>&1
  summary=$(tail -n 1 "$log" | sed 's/^=* *//; s/ *=*$//; s/ in [0-9.]*s.*//')
  # Why anything failed or skipped: each distinct reason once, with the
  # number of tests it stopped; a failure without a one-line reason is
  # named by its test.
  why=$(grep -E '^(FAILED|ERROR|SKIPPED)' "$log" |
        sed -E 's/^SKIPPED \[([0-9]+)\] [^:]*:[0-9]+: (.*)/\1 skipped: \2/;
                s/^(FAILED|ERROR) ([^ []*(\[[^]]*\])?) - (.*)/1 \L\1\E: \4/;
                s/^(FAILED|ERROR) ([^ ]*)$/1 \L\1\E: \2/;
                s/^(FAILED|ERROR) .* - (.*)/1 \L\1\E: \2/' |
        cut -c1-200 | awk '{n=$1; $1=""; c[substr($0,2)]+=n} END {for (k in c) print c[k] " " k}' |
        sort -rn | paste -sd '|' - | sed 's/|/ <br> /g')
  rows+=("| $v | $summary | ${why:-} |")
done
{
  echo "| JAX (and jaxlib) | tests/python | what failed or skipped, and why |"
  echo "|---|---|---|"
  printf '%s\n' "${rows[@]}"
} | tee "$out"
