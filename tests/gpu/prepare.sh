#!/usr/bin/env bash
# What make test-gpu needs on a GPU machine that cannot fetch anything, put
# in .carry/ (ignored by git) on a machine that can, to travel with the tree:
#
#   .carry/libffi/    libffi-dev and libffi8 (.deb, Debian's), for machines
#                     without libffi's headers
#   .carry/wheels/    mpich 5.0.2 and mpi4py 4.1.2 for CPython 3.12 (PyPI),
#                     the MPI mpi4jax is built against there
#   .carry/mpi4jax-0.8.1.post2/  mpi4jax's sdist, as tests/fixtures/fetch.py
#                     checked and unpacked it into the per-user cache
#
# usage: tests/gpu/prepare.sh [PYTHON_VERSION]   (default 3.12: the GPU
# machine's Python)
set -euo pipefail
cd "$(dirname "$0")/../.."
pyver=${1:-3.12}
mkdir -p .carry/libffi .carry/wheels
if ! compgen -G ".carry/libffi/libffi-dev_*.deb" >/dev/null; then
  (cd .carry/libffi && apt-get download libffi-dev libffi8 2>/dev/null)
fi
python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version "$pyver" --implementation cp --platform manylinux_2_28_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64 \
  -d .carry/wheels mpich==5.0.2 mpi4py==4.1.2
python3 tests/fixtures/fetch.py >/dev/null
src=$(python3 tests/fixtures/fetch.py --where)/mpi4jax-0.8.1.post2-src/mpi4jax-0.8.1.post2
rm -rf .carry/mpi4jax-0.8.1.post2
cp -r "$src" .carry/mpi4jax-0.8.1.post2
du -sh .carry
