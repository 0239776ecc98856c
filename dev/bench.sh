#!/usr/bin/env bash
# make bench: the figures of docs/c-api.md and the README, measured on the
# build users install, Release (-O3), once per compiler, each in a build
# folder of its own:
#
#   build-bench-zig  the wheel's own configuration (dev/wheel.py
#                    --print-configure): zig cc, glibc 2.27, libffi inside;
#                    plus valgrind's headers, for the instruction counts,
#                    and jaxlib's, for B1x (the ffi.h handlers, zig c++)
#   build-bench-gcc  the system's gcc, as `pip install .` builds it
#
# Each build's `ccshim bench` writes its table and its JSON (which say the
# build type, compiler and flags) into its folder; bench/collect.py puts
# the two into bench/results.json and bench/results.txt.  Then the JAX
# end-to-end benchmark on the gcc build, and the chart.
#
# usage: dev/bench.sh [PYTHON]   (PYTHON: the one with JAX, for the e2e run)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-.venv/bin/python}
jobs=$(nproc 2>/dev/null || echo 2)
valgrind_inc=()
if [ -f /usr/include/valgrind/callgrind.h ]; then
  valgrind_inc=(-DCCSHIM_VALGRIND_INCLUDE=/usr/include)
else
  echo "bench: no /usr/include/valgrind/callgrind.h (Debian's valgrind): no instruction counts" >&2
fi

# B1x, the ffi.h reference handlers, need jaxlib's headers (the Python's
# JAX): without them both builds measure without it, and say why.
jaxlib_inc=()
if inc=$("$python" -c 'import jax; print(jax.ffi.include_dir())' 2>/dev/null) &&
  [ -f "$inc/xla/ffi/api/ffi.h" ]; then
  jaxlib_inc=(-DCCSHIM_JAXLIB_INCLUDE="$inc")
else
  echo "bench: no jaxlib headers from $python (jax.ffi.include_dir()): no B1x (ffi.h) column" >&2
fi

echo "== build-bench-zig: the wheel's build (zig cc), Release"
mapfile -t zig_configure < <(python3 dev/wheel.py --print-configure x86_64 build-bench-zig)
"${zig_configure[@]}" "${valgrind_inc[@]}" "${jaxlib_inc[@]}" >/dev/null
cmake --build build-bench-zig -j "$jobs" --target ccshim_tool >/dev/null

echo "== build-bench-gcc: the system's gcc, Release"
# The compiler by CC, not -DCMAKE_C_COMPILER: a cache made with another one
# would be deleted by CMake and the other -D settings lost with it.
CC=gcc CXX=g++ cmake -S . -B build-bench-gcc -DCMAKE_BUILD_TYPE=Release -DCCSHIM_WERROR=ON \
  -DCCSHIM_BUILD_EXAMPLES=OFF "${valgrind_inc[@]}" "${jaxlib_inc[@]}" >/dev/null
cmake --build build-bench-gcc -j "$jobs" --target ccshim_tool ccshim_e2e_kernels >/dev/null

# Both must be what they claim, whatever their folders held before.
for b in gcc zig; do
  if ! grep -qx 'CMAKE_BUILD_TYPE:STRING=Release' build-bench-$b/CMakeCache.txt; then
    echo "bench: build-bench-$b is not a Release build ($(grep '^CMAKE_BUILD_TYPE:' \
      build-bench-$b/CMakeCache.txt)); remove the folder and run make bench again" >&2
    exit 2
  fi
done

# One at a time: two benchmarks on two cores would measure each other.
# The wheel's build links the command with its installed RPATH
# ($ORIGIN/../lib), so each finds its build's library by LD_LIBRARY_PATH.
rc=0
for b in gcc zig; do
  echo "== ccshim bench, build-bench-$b"
  LD_LIBRARY_PATH=$PWD/build-bench-$b build-bench-$b/tools/ccshim bench \
    --json build-bench-$b/bench.json | tee build-bench-$b/bench.txt || rc=1
done
python3 bench/collect.py --json bench/results.json --text bench/results.txt \
  build-bench-gcc build-bench-zig

echo "== the JAX end-to-end benchmark, on build-bench-gcc"
CCSHIM_LIBRARY=$PWD/build-bench-gcc/libccshim.so CCSHIM_BUILD_DIR=$PWD/build-bench-gcc \
  "$python" bench/jax_e2e.py --json bench/e2e.json
"$python" bench/plot.py bench/results.json docs/bench.png
# 1: a row missed the instruction target (the tables say which).
exit $rc
