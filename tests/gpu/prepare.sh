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
#   .carry/port-mpi4jax/  the same with mpi4jax's kept port (dev/census/
#                     ports/) applied
#   .carry/veros-1.7.0/  veros's sdist, as fetch.py unpacked it into the
#                     per-user cache; .carry/port-veros/ the same with
#                     veros's kept port applied
#   .carry/port-kepler-jax/  kepler_jax's kept port (dev/census/ports/),
#                     applied to its source in the per-user cache (census.py
#                     fetch kepler-jax), with the build backend its pyproject
#                     names in .carry/wheels (pure-Python wheels); left out,
#                     said, where the cache has no such source
#   .carry/census/KEY/  with --census: what the census step needs of each
#                     GPU-only project with a [gpu.suite] (its wheels or sdist
#                     from PyPI, checked by SHA-256, and its tests where only
#                     its repository has them: fetched into the per-user cache
#                     first by tests/fixtures/fetch.py --git NAME CLONE)
#
# The device tool carries at most 64 MiB with the tree, so the census travels
# alone: carry .carry/libffi and .carry/census for TEST_GPU_ONLY=census, and
# the rest of .carry (about 18 MiB) for the other steps
# (python3 dev/census/gpu_suite.py sizes says what each weighs).
#
# usage: tests/gpu/prepare.sh [--census] [PYTHON_VERSION]   (default 3.12:
# the GPU machine's Python)
set -euo pipefail
cd "$(dirname "$0")/../.."
census=0
[ "${1:-}" = --census ] && { census=1; shift; }
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
rm -rf .carry/mpi4jax-0.8.1.post2 .carry/port-mpi4jax
cp -r "$src" .carry/mpi4jax-0.8.1.post2
cp -r "$src" .carry/port-mpi4jax
patch -s -p1 -d .carry/port-mpi4jax <dev/census/ports/mpi4jax-0.8.1.post2.patch
veros=$(python3 tests/fixtures/fetch.py --where)/veros-1.7.0-src/veros-1.7.0
rm -rf .carry/veros-1.7.0 .carry/port-veros
cp -r "$veros" .carry/veros-1.7.0
cp -r "$veros" .carry/port-veros
patch -s -p1 -d .carry/port-veros <dev/census/ports/veros-1.7.0.patch
kepler=$(python3 tests/fixtures/fetch.py --where)/census/kepler-jax-371dca9-src
rm -rf .carry/port-kepler-jax
if [ -f "$kepler/.complete" ]; then
  cp -r "$kepler" .carry/port-kepler-jax && rm -f .carry/port-kepler-jax/.complete
  patch -s -p1 -d .carry/port-kepler-jax <dev/census/ports/kepler-jax-371dca9.patch
  python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    -d .carry/wheels scikit-build-core==0.11.1 setuptools-scm==8.2.0 pathspec==0.12.1 \
    packaging==24.2 pybind11==2.13.6 setuptools==80.9.0
else
  echo "prepare: no kepler_jax source in the cache ($kepler; census.py fetch kepler-jax" \
    "--git-from CLONE): the port-kepler step will say so" >&2
fi
du -sh .carry
if [ $census = 1 ]; then
  (cd dev/census && python3 gpu_suite.py list) | while read -r key; do
    python3 dev/census/gpu_suite.py carry "$key" ".carry/census/$key"
  done
  python3 dev/census/gpu_suite.py sizes
fi
