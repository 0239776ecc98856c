#!/usr/bin/env bash
# The plain CMake path, as a C or C++ project takes it: every documented
# combination of ccshim's CMake options configures, and the default one
# (no jaxlib headers, nothing installed by hand) builds and passes ctest,
# what cannot run skipping with its reason.  Run by `make test`.
#
# usage: dev/test_cmake.sh [JOBS]
set -u
cd "$(dirname "$0")/.."
jobs=${1:-2}
# In the tree (ignored by git), so that ccache, where make set it up,
# finds the same relative paths from one run to the next.
work=$PWD/build-cmake
rm -rf "$work" && mkdir -p "$work"
status=0
# The combinations the README's table documents, one line each.
combinations=(
  ""
  "-DCCSHIM_BUILD_TESTS=OFF"
  "-DCCSHIM_BUILD_EXAMPLES=OFF"
  "-DCCSHIM_BUILD_TOOLS=OFF"
  "-DCCSHIM_BUILD_TESTS=OFF -DCCSHIM_BUILD_EXAMPLES=OFF -DCCSHIM_BUILD_TOOLS=OFF"
  "-DCCSHIM_BUILD_EXAMPLES=OFF -DCCSHIM_BUILD_TOOLS=OFF"
  "-DCCSHIM_WERROR=ON"
  "-DCCSHIM_SANITIZE=address,undefined"
  # libffi inside the library, as the portable wheel has it (Debian's libffi_pic.a)
  "-DCCSHIM_LIBFFI_STATIC=/usr/lib/$(gcc -print-multiarch)/libffi_pic.a -DCCSHIM_WHEEL_LAYOUT=ON"
)
i=0
for c in "${combinations[@]}"; do
  i=$((i + 1))
  # shellcheck disable=SC2086 # each line is several words on purpose
  if cmake -S . -B "$work/c$i" $c >"$work/c$i.log" 2>&1; then
    echo "cmake: configures: ${c:-(defaults)}"
  else
    echo "cmake: FAILS to configure: ${c:-(defaults)}"
    tail -n 15 "$work/c$i.log"
    status=1
  fi
done
# The default build, from the configure above, as far as ctest (the checks
# of the sources alone, label source, aside: they do not depend on the
# build, and make test-c ran them).
if cmake --build "$work/c1" -j "$jobs" >"$work/build.log" 2>&1; then
  (cd "$work/c1" && ctest -j "$jobs" --output-on-failure -LE source) >"$work/ctest.log" 2>&1
  rc=$?
  grep -E 'tests passed|Skipped|Failed|\*\*\*' "$work/ctest.log" | sed 's/^/cmake: /'
  [ $rc = 0 ] || { tail -n 40 "$work/ctest.log"; status=1; }
else
  echo "cmake: the default build FAILS"
  tail -n 30 "$work/build.log"
  status=1
fi
exit $status
