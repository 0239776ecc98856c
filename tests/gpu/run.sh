#!/usr/bin/env bash
# The GPU check, for a machine with an NVIDIA GPU and JAX's CUDA plugin:
#
#   builds ccshim and the CUDA legacy example (legacy/add_gpu.cu), then runs
#   (c) the example through ccshim in the embedded runtime, with a real
#       cudaStream_t and device memory, next to the legacy invoker;
#   (a) and (b) the same kernel in JAX on the GPU, through XLA's legacy GPU
#       path and through ccshim, compared byte for byte (jax_gpu.py);
#   (d) its native typed-FFI port (examples/migration/ported/add_gpu_ffi.cu)
#       against (b).
#
# Exits 77 where there is no GPU.  Needs nvcc, cmake and a python3 with JAX;
# libffi's headers may be missing (they are on such machines): put the
# libffi-dev and libffi8 .deb files in .carry/libffi/ (from `apt-get
# download libffi-dev libffi8` elsewhere) and they are unpacked into a
# private prefix.
#
# usage: tests/gpu/run.sh [BUILD_DIR]     (default build-gpu)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-gpu}
python=${PYTHON:-python3}

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "skipped: no NVIDIA GPU here"
  exit 77
fi
nvidia-smi -L

# libffi, from the system or from .deb files carried along with the tree.
cmake_extra=()
if ! pkg-config --exists libffi 2>/dev/null; then
  debs=(.carry/libffi/*.deb)
  if [ ! -e "${debs[0]}" ]; then
    echo "no libffi headers and no .deb files in .carry/libffi/" >&2
    exit 1
  fi
  prefix=$(mktemp -d)/libffi
  for d in "${debs[@]}"; do dpkg -x "$d" "$prefix"; done
  inc=$(dirname "$(find "$prefix" -name ffi.h | head -n 1)")
  lib=$(dirname "$(find "$prefix" -name 'libffi.so*' | head -n 1)")
  mkdir -p "$prefix/pkgconfig"
  cat >"$prefix/pkgconfig/libffi.pc" <<EOF
Name: libffi
Description: libffi unpacked from .deb files
Version: 3.4
Libs: -L$lib -lffi -Wl,-rpath,$lib
Cflags: -I$inc
EOF
  export PKG_CONFIG_PATH="$prefix/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  echo "libffi from .carry/libffi: $inc, $lib"
fi

jax_include=$("$python" -c 'import jax; print(jax.ffi.include_dir())')
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCCSHIM_JAXLIB_INCLUDE="$jax_include" "${cmake_extra[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)" --target ccshim add_gpu_cuda \
  ccshim_example_gpu_cuda migration_ported_gpu >/dev/null

echo "== (c) the embedded runtime, a real stream and device memory"
"$build/examples/add_gpu_cuda"

echo "== (a) XLA's legacy GPU path and (b) ccshim, in JAX"
CCSHIM_LIBRARY="$PWD/$build/libccshim.so" PYTHONPATH="$PWD/python" \
  "$python" tests/gpu/jax_gpu.py "$build/examples/libccshim_example_gpu_cuda.so" \
  --ported "$build/examples/libmigration_ported_gpu.so"
