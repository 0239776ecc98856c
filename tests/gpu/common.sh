# shellcheck shell=bash
# Sourced by tests/gpu/run.sh and tests/gpu/test_gpu.sh: what a machine with
# an NVIDIA GPU needs before ccshim builds there.
#
#   gpu_here                    0 when nvidia-smi sees a GPU
#   libffi_or_carried           libffi's headers from the system, or from the
#                               .deb files in .carry/libffi/ (tests/gpu/
#                               prepare.sh puts them there), unpacked into a
#                               private prefix that pkg-config is pointed at
#   cuda_architecture           the first GPU's compute capability as CMake
#                               spells it (90 for an H100), else 90
#   build_gpu BUILD PYTHON TARGET...
#                               ccshim configured with CUDA for that
#                               architecture and jaxlib's FFI headers (of
#                               PYTHON's JAX), and TARGETs built
#   build_examples BUILD PYTHON [TARGET...]
#                               build_gpu of the library, the CUDA examples
#                               and the ported example, and TARGETs
#   carried_mpi4jax             0 when .carry/ holds mpi4jax's sdist and
#                               the mpich wheel (tests/gpu/prepare.sh)

gpu_here() {
  command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1
}

libffi_or_carried() {
  pkg-config --exists libffi 2>/dev/null && return 0
  local debs=(.carry/libffi/*.deb)
  if [ ! -e "${debs[0]}" ]; then
    echo "no libffi headers here and no .deb files in .carry/libffi/ (tests/gpu/prepare.sh)" >&2
    return 1
  fi
  local prefix inc lib d
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
}

cuda_architecture() {
  local cap
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1)
  cap=${cap//./}
  case $cap in '' | *[!0-9]*) echo 90 ;; *) echo "$cap" ;; esac
}

build_gpu() {
  local build=$1 python=$2 jax_include
  shift 2
  jax_include=$("$python" -c 'import jax; print(jax.ffi.include_dir())') || return 1
  mkdir -p "$build"
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES="$(cuda_architecture)" \
    -DCCSHIM_JAXLIB_INCLUDE="$jax_include" >"$build/configure.log" 2>&1 ||
    { tail -n 20 "$build/configure.log"; return 1; }
  cmake --build "$build" -j "$(nproc)" --target "$@" >"$build/build.log" 2>&1 ||
    { tail -n 30 "$build/build.log"; return 1; }
}

build_examples() {
  build_gpu "$1" "$2" ccshim add_gpu_cuda ccshim_example_gpu_cuda migration_ported_gpu "${@:3}"
}

carried_mpi4jax() {
  [ -d .carry/mpi4jax-0.8.1.post2 ] && compgen -G ".carry/wheels/mpich-*.whl" >/dev/null
}
