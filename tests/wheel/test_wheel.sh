#!/usr/bin/env bash
# The sdist's path: `pip install` of the repository into a fresh venv, which
# builds libccshim and the command with CMake (scikit-build-core) against
# the system's libffi; then, outside the tree and with no CCSHIM_* variable,
# tests/wheel/use_wheel.py's steps that touch what this path built: the
# library found in the package and linking the system's libffi, a legacy
# kernel compiled against its headers and run through a libffi closure, the
# C command, a find_package consumer.  (JAX's side, the same Python code in
# both, runs against the portable wheel: tests/wheel/test_portable.sh.)
# numpy and the build backend come from the wheelhouse dev/setup.sh test
# keeps for this Python in the per-user cache, else from PyPI; skips (77)
# only when neither has them.  A failure to build or install ccshim fails.
#
# usage: test_wheel.sh REPO_ROOT [PYTHON]
set -u
root=$(cd "$1" && pwd)
python=${2:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$work/venv" || { echo "skipped: $python cannot make a venv"; exit 77; }
pip=("$work/venv/bin/python" -m pip --disable-pip-version-check)
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
wheelhouse=$(python3 "$root/tests/fixtures/fetch.py" --where)/wheelhouse-$version
deps=(numpy scikit-build-core libcst cython)
[ -f "$wheelhouse/requirements.txt" ] &&
  deps=(--isolated --no-index --find-links "$wheelhouse" "${deps[@]}")
if ! "${pip[@]}" install -q "${deps[@]}" >"$work/pip-deps.log" 2>&1; then
  echo "skipped: no wheelhouse for Python $version, and PyPI unreachable? $(tail -n 1 "$work/pip-deps.log")"
  exit 77
fi
# The build backend is in the venv already, so this step needs no network:
# whatever fails here is ccshim's.  CMake builds in the tree (ignored by
# git), made anew, so that ccache, where make set it up, finds the same
# relative paths from one run to the next.
rm -rf "$root/build-sdist"
if ! "${pip[@]}" install -q --no-build-isolation --no-index -C build-dir="$root/build-sdist" \
     "$root" >"$work/pip.log" 2>&1; then
  echo "FAIL: pip install of ccshim:"
  tail -n 30 "$work/pip.log"
  exit 1
fi
# This path links the system's libffi, as the README says of the sdist.
lib=$("$work/venv/bin/python" -c 'import ccshim; print(ccshim.library_path())') || exit 1
if ! readelf -d "$lib" | grep -q 'NEEDED.*\[libffi\.so'; then
  echo "FAIL: $lib does not link the system's libffi"
  exit 1
fi
cd "$work" || exit 1
. "$root/tests/wheel/common.sh"
as_a_user "$work/venv/bin/python" "$root/tests/wheel/use_wheel.py" "$root" \
  where compile closure command consumer
