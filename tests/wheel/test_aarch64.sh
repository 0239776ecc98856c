#!/usr/bin/env bash
# The C test suite on aarch64, under qemu-user, against the aarch64 wheel's
# own library: the suite is cross-built with zig as the wheel is
# (cmake/zig-toolchain.cmake, Debian's arm64 libffi_pic.a inside), and each
# test (`ctest -L c`) runs under qemu-aarch64 with the libccshim.so taken
# out of dist/ccshim-V-py3-none-manylinux_2_27_aarch64.whl first on its
# library path; the loader is asked once which file it took.  The target's
# loader and libc are Debian's libc6:arm64 (dpkg multiarch, dev/setup.sh
# wheel).  Skips (77), saying why, where the aarch64 wheel or qemu-aarch64
# is missing.
#
# usage: test_aarch64.sh REPO_ROOT [JOBS]
set -u
root=$(cd "$1" && pwd)
jobs=${2:-2}
cd "$root" || exit 1
wheel=$(python3 dev/wheel.py --path aarch64 2>&1) || { echo "skipped: $wheel"; exit 77; }
qemu=$(command -v qemu-aarch64) ||
  { echo "skipped: no qemu-aarch64 (Debian's qemu-user, dev/setup.sh wheel)"; exit 77; }
[ -e /lib/ld-linux-aarch64.so.1 ] ||
  { echo "skipped: no aarch64 loader (Debian's libc6:arm64, dev/setup.sh wheel)"; exit 77; }
build=$root/build-aarch64
lib=$build/wheel-lib
rm -rf "$lib" && mkdir -p "$lib" || exit 1
python3 - "$wheel" "$lib" <<'PY' || exit 1
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as zf:
    open(f"{sys.argv[2]}/libccshim.so", "wb").write(zf.read("ccshim/lib/libccshim.so"))
PY
echo "the suite runs against $(basename "$wheel")'s libccshim.so"

log=$build/build.log
mkdir -p "$build"
if ! { cmake -S . -B "$build" --toolchain cmake/zig-toolchain.cmake \
         -DCCSHIM_ZIG_TARGET=aarch64-linux-gnu.2.27 \
         -DCCSHIM_LIBFFI_STATIC=/usr/lib/aarch64-linux-gnu/libffi_pic.a \
         -DCMAKE_BUILD_TYPE=Release -DCCSHIM_WERROR=ON -DCCSHIM_WHEEL_LAYOUT=ON &&
       cmake --build "$build" -j "$jobs"; } >"$log" 2>&1; then
  echo "FAIL: the aarch64 build of the suite; the end of $log:"
  tail -n 30 "$log"
  exit 1
fi
# The loader's own word on which libccshim.so a test takes.
export QEMU_SET_ENV=LD_LIBRARY_PATH=$lib
took=$(QEMU_SET_ENV=LD_LIBRARY_PATH=$lib,LD_TRACE_LOADED_OBJECTS=1 \
       "$qemu" "$build/tests/test_adapter_cpu" | grep 'libccshim\.so')
if [[ $took != *"=> $lib/libccshim.so"* ]]; then
  echo "FAIL: under qemu the tests do not load the wheel's library: $took"
  exit 1
fi
echo "qemu-aarch64: $(echo $took)"
cd "$build" && ctest -L c -j "$jobs" --output-on-failure
