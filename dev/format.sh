#!/usr/bin/env bash
# Checks (or, with --fix, applies) .clang-format on every tracked C, C++,
# CUDA and HIP source.  clang-format 14 only: other releases lay the same
# style out differently, so a check with them would fail on formatted code.
# Exit 0 when all follow the style, 1 when some do not (each listed, with
# clang-format's own diagnostics), 77 when clang-format 14 or git is absent.
#
#   dev/format.sh [--fix] [SOURCE_DIR]
set -u
fix=0
if [ "${1:-}" = --fix ]; then fix=1; shift; fi
cd "${1:-$(dirname "$0")/..}" || exit 2

cf=
for c in clang-format-14 clang-format; do
  if command -v "$c" >/dev/null &&
     "$c" --version | grep -q 'version 14\.'; then cf=$c; break; fi
done
if [ -z "$cf" ]; then
  echo "skipped: clang-format 14 is not installed (Debian: clang-format-14)"
  exit 77
fi
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "skipped: not a git checkout, so which files are sources is not known"
  exit 77
fi

mapfile -t files < <(git ls-files -- '*.c' '*.h' '*.cc' '*.cu' '*.hip' '*.inc')
if [ $fix = 1 ]; then
  "$cf" -i -- "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! "$cf" --dry-run -Werror -- "$f" >/dev/null 2>&1; then
    echo "not formatted: $f  (dev/format.sh --fix, or: $cf -i $f)"
    bad=$((bad + 1))
  fi
done
echo "${#files[@]} sources checked against .clang-format with $("$cf" --version | sed 's/.*version //'), $bad not formatted"
[ $bad = 0 ]
