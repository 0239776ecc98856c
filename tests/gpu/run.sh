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
# libffi's headers may be missing (they are on such machines): tests/gpu/
# prepare.sh puts the libffi-dev and libffi8 .deb files in .carry/libffi/
# and they are unpacked into a private prefix (tests/gpu/common.sh).
# make test-gpu (tests/gpu/test_gpu.sh) runs this and more.
#
# usage: tests/gpu/run.sh [BUILD_DIR]     (default build-gpu)
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/gpu/common.sh
build=${1:-build-gpu}
python=${PYTHON:-python3}

if ! gpu_here; then
  echo "skipped: no NVIDIA GPU here"
  exit 77
fi
nvidia-smi -L
libffi_or_carried
build_examples "$build" "$python"

echo "== (c) the embedded runtime, a real stream and device memory"
"$build/examples/add_gpu_cuda"

echo "== (a) XLA's legacy GPU path and (b) ccshim, in JAX"
CCSHIM_LIBRARY="$PWD/$build/libccshim.so" PYTHONPATH="$PWD/python" \
  "$python" tests/gpu/jax_gpu.py "$build/examples/libccshim_example_gpu_cuda.so" \
  --ported "$build/examples/libmigration_ported_gpu.so"
