#!/usr/bin/env bash
# A user's install: `pip install` of the repository into a fresh venv, then
# tests/wheel/use_wheel.py there, outside the tree, with no CCSHIM_*
# variable.  Skips (77) only when PyPI cannot be reached for what comes from
# it (jax, jaxlib, numpy, the build backend); a failure to build or install
# ccshim itself fails.
#
# usage: test_wheel.sh REPO_ROOT [PYTHON]
set -u
root=$(cd "$1" && pwd)
python=${2:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$work/venv" || { echo "skipped: $python cannot make a venv"; exit 77; }
pip=("$work/venv/bin/python" -m pip --disable-pip-version-check)
if ! "${pip[@]}" install -q jax==0.10.2 jaxlib==0.10.2 numpy scikit-build-core \
     >"$work/pip-deps.log" 2>&1; then
  echo "skipped: PyPI unreachable? $(tail -n 1 "$work/pip-deps.log")"
  exit 77
fi
# The build backend is in the venv already, so this step needs no network:
# whatever fails here is ccshim's.
if ! "${pip[@]}" install -q --no-build-isolation "$root" >"$work/pip.log" 2>&1; then
  echo "FAIL: pip install of ccshim:"
  tail -n 30 "$work/pip.log"
  exit 1
fi
cd "$work" || exit 1
env -u CCSHIM_LIBRARY -u CCSHIM_BUILD_DIR -u PYTHONPATH \
  "$work/venv/bin/python" "$root/tests/wheel/use_wheel.py" "$root"
