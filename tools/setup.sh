#!/usr/bin/env bash
# Installs what ccshim's build and tests need, and nothing that is already
# there: Debian packages through apt-get, Python packages from PyPI into the
# project's .venv.  Idempotent and quiet; run by `make demo` and `make test`.
#
# Required (a failure stops here): a C compiler, cmake, pkg-config, libffi.
# Optional (a failure is reported, and the tests that need it skip): clang's
# sanitizer and fuzzer runtimes, clang-format 14, valgrind, OpenBLAS, HIP,
# and the PyPI packages (JAX, numpy, pytest, matplotlib).
set -u
cd "$(dirname "$0")/.."
. tools/pythons.sh

required_debs=(gcc g++ make cmake pkg-config libffi-dev python3-venv)
optional_debs=(clang libclang-rt-14-dev clang-format-14 valgrind libopenblas-dev
               hipcc libamdhip64-dev)
# Pinned so that every run tests the same thing.  jax 0.10.2 is the newest
# release for this machine's Python 3.11 (FFI API 0.3).
# flatbuffers: jax.export's serialization (ccshim rewrite reads and writes
# exported artifacts with it).
# atheris: the fuzz harness of ccshim.export's reader (tests/fuzz/).
# mpich, mpi4py, cython: building mpi4jax's Cython extension (MPI without
# root: the mpich wheel has mpicc, mpi.h and mpiexec).
# veros 1.7.0's requirements.txt beside JAX and SciPy, as it pins them: its
# model runs in the zero-change tests (tests/python/veros_model_program.py).
veros_model_pkgs=(click==8.5.0 entrypoints==0.4 requests==2.34.2 h5netcdf==1.8.1
                  h5py==3.16.0 pillow==12.3.0 loguru==0.7.3 tqdm==4.70.1)
python_pkgs=(jax==0.10.2 jaxlib==0.10.2 numpy==2.4.6 pytest==9.2.0
             matplotlib==3.11.2 scipy==1.16.3 flatbuffers==25.12.19 atheris==3.0.0
             mpich==5.0.2 mpi4py==4.1.2 cython==3.3.1 "${veros_model_pkgs[@]}")
# Real legacy kernels for the tests: jaxlib 0.4.30's CPU LAPACK/BLAS
# capsules (legacy v2 kernels, with its first typed-FFI ones mixed in), run
# unchanged through XLA's legacy path and through ccshim.  Only the module
# and its licence are kept, under .cache/ (never committed).
old_jaxlib=0.4.30
old_fft_jaxlib=0.4.23
old_finufft=0.1.0

say() { printf 'setup: %s\n' "$*"; }

missing_debs() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
      printf '%s\n' "$p"
  done
}

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo -n "$@"
  else return 1
  fi
}

apt_updated=0
apt_install() {
  [ $# -eq 0 ] && return 0
  command -v apt-get >/dev/null || return 1
  if [ $apt_updated = 0 ]; then
    as_root apt-get update -qq >/dev/null 2>&1 || return 1
    apt_updated=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends "$@" >/dev/null 2>&1
}

# python3-venv is how Debian's own python3 makes venvs; a Python with venv
# built in (pyenv, for one) needs no package for it.
if python3 -c 'import ensurepip, venv' 2>/dev/null; then
  required_debs=("${required_debs[@]/python3-venv}")
fi

need=$(missing_debs "${required_debs[@]}")
if [ -n "$need" ]; then
  say "installing $(echo $need)"
  apt_install $need || { say "could not install: $(echo $need)"; exit 1; }
fi
want=$(missing_debs "${optional_debs[@]}")
if [ -n "$want" ]; then
  say "installing $(echo $want)"
  apt_install $want ||
    say "could not install $(echo $want); the tests that need them will skip"
fi

# The virtualenv.  A stamp records what was installed, so a second run
# costs one file comparison.
stamp=.venv/.ccshim-requirements
wanted="${python_pkgs[*]}"
if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  python3 -m venv .venv || { say "could not create .venv"; exit 1; }
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  say "installing ${python_pkgs[*]} into .venv"
  if .venv/bin/python -m pip install -q --disable-pip-version-check \
       "${python_pkgs[@]}" >/dev/null 2>.venv/pip-error.log; then
    printf '%s' "$wanted" >"$stamp"
  else
    say "pip failed (PyPI unreachable?); the JAX tests will skip:"
    tail -n 3 .venv/pip-error.log | sed 's/^/setup:   /'
  fi
fi
# The ccshim Python package itself, from this tree (add_source_path).
if [ -d python/ccshim ]; then
  add_source_path .venv "$PWD/python" || say "could not add python/ to .venv"
fi
# The newest JAX, which needs Python 3.12: a venv of its own (.venv-newest),
# so that `make test` runs the Python suite on the pinned JAX and on the
# newest one.  Python 3.12 from pyenv or PATH; without one, said and skipped.
newest_pkgs=(jax==0.12.0.1 jaxlib==0.12.0.1 numpy==2.4.6 pytest==9.2.0 scipy==1.16.3
             flatbuffers==25.12.19 cython==3.3.1 setuptools==75.8.0)
newest_stamp=.venv-newest/.ccshim-requirements
if [ "$(cat "$newest_stamp" 2>/dev/null)" != "${newest_pkgs[*]}" ]; then
  py312=$(python_of 3.12)
  if [ -z "$py312" ]; then
    say "no Python 3.12 here: the newest JAX (${newest_pkgs[0]}) is not tested"
  else
    say "installing ${newest_pkgs[*]} into .venv-newest (Python 3.12)"
    rm -rf .venv-newest
    if "$py312" -m venv .venv-newest >/dev/null 2>&1 &&
       .venv-newest/bin/python -m pip install -q --disable-pip-version-check \
         "${newest_pkgs[@]}" >/dev/null 2>.venv-newest/pip-error.log; then
      printf '%s' "${newest_pkgs[*]}" >"$newest_stamp"
    else
      say "could not install the newest JAX (PyPI unreachable?); its run will skip"
    fi
  fi
fi
if [ -x .venv-newest/bin/python ] && [ -d python/ccshim ]; then
  add_source_path .venv-newest "$PWD/python" || say "could not add python/ to .venv-newest"
fi
# Real legacy kernels from PyPI wheels (x86-64 Linux, CPython 3.11 ABI), for
# the tests only, under .cache/: fetch_wheel NAME VERSION [MEMBER...] keeps
# the named members (all of the wheel when none are named).
fetch_wheel() {
  local name=$1 version=$2 dest=.cache/$1-$2
  shift 2
  [ -f "$dest/.complete" ] && return 0
  [ -x .venv/bin/python ] && [ "$(uname -m)" = x86_64 ] || return 0
  say "fetching $name $version from PyPI (real legacy kernels for the tests)"
  mkdir -p .cache/wheels
  rm -f .cache/wheels/"${name//-/_}"-"$version"-*.whl
  if ! .venv/bin/python -m pip download -q --disable-pip-version-check --no-deps \
       --only-binary=:all: --python-version 3.11 --platform manylinux2014_x86_64 \
       -d .cache/wheels "$name==$version" >/dev/null 2>".cache/pip-$name.log"; then
    say "could not download $name $version (PyPI unreachable?); its tests will skip"
    return 0
  fi
  .venv/bin/python - "$dest" .cache/wheels/"${name//-/_}"-"$version"-*.whl "$@" <<'PY' ||
import pathlib, sys, zipfile
dest, wheel, members = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(wheel) as z:
    z.extractall(dest, members or None)
(pathlib.Path(dest) / ".complete").write_text(wheel + "\n")
PY
    say "could not unpack $name $version; its tests will skip"
  rm -f .cache/wheels/"${name//-/_}"-"$version"-*.whl
}
# jaxlib 0.4.30: its CPU LAPACK/BLAS capsules (legacy v2, with its first
# typed-FFI kernels mixed in).  jax-finufft 0.1.0: pybind11 NUFFT kernels
# whose descriptor is a u8 operand.  Both Apache-2.0.
fetch_wheel jaxlib "$old_jaxlib" jaxlib/cpu/_lapack.so jaxlib/lapack.py \
  "jaxlib-$old_jaxlib.dist-info/LICENSE.txt"
fetch_wheel jax-finufft "$old_finufft"
# jaxlib 0.4.23: its CPU FFT kernels (ducc_fft, dynamic_ducc_fft; legacy v2,
# a flatbuffer descriptor and s32 shape and stride arrays as operands),
# which later jaxlibs no longer ship (XLA runs FFTs itself).  Apache-2.0.
fetch_wheel jaxlib "$old_fft_jaxlib" jaxlib/cpu/_ducc_fft.so jaxlib/ducc_fft.py \
  "jaxlib-$old_fft_jaxlib.dist-info/LICENSE.txt"
# Artifacts of 2023 for the rewrite tests: JAX 0.4.23 (December 2023, from
# PyPI), in a venv of its own, exports and serializes programs whose CPU
# linear algebra lowers to jaxlib's legacy LAPACK/BLAS custom calls, and
# records what running them gave (tests/python/jax2023_artifacts.py).  JAX's
# own back-compatibility data of that year is in no wheel or sdist on PyPI.
jax2023_pkgs=(jax==0.4.23 jaxlib==0.4.23 numpy==1.26.4 scipy==1.11.4 ml-dtypes==0.2.0
              opt_einsum==3.4.0 absl-py==2.5.1 flatbuffers==25.12.19)
make_2023_artifacts() {
  local dest=.cache/jax-2023 venv=.cache/venv-jax-0.4.23
  [ -f "$dest/.complete" ] && return 0
  [ "$(uname -m)" = x86_64 ] || return 0
  say "making artifacts with JAX 0.4.23 (December 2023) for the rewrite tests"
  rm -rf "$dest"
  if ! { [ -x "$venv/bin/python" ] || python3 -m venv "$venv"; } ||
     ! "$venv/bin/python" -m pip install -q --disable-pip-version-check \
         "${jax2023_pkgs[@]}" >/dev/null 2>".cache/pip-jax2023.log"; then
    say "could not install JAX 0.4.23 (PyPI unreachable?); its tests will skip"
    return 0
  fi
  if ! "$venv/bin/python" tests/python/jax2023_artifacts.py "$dest" \
       >".cache/jax2023.log" 2>&1; then
    say "JAX 0.4.23 could not make the artifacts (.cache/jax2023.log); their tests will skip"
    rm -rf "$dest"
    return 0
  fi
  touch "$dest/.complete"
}
make_2023_artifacts
# Artifacts of seven JAX releases, from the first whose jax.export serializes
# (0.4.22) to 0.7.2, each exported and run by that release in a venv of its
# own (removed once its artifacts are made), for tests/python/
# test_artifacts_by_release.py: CPU LAPACK (legacy calls to 0.4.30, typed
# after), FFTs, a shape-polymorphic batch and a lax.scan, each with the
# outputs that release computed (tests/python/jax_artifacts.py).
old_common=(absl-py==2.5.1 opt_einsum==3.4.0 flatbuffers==25.12.19)
old_numpy1=(numpy==1.26.4 scipy==1.11.4 ml-dtypes==0.2.0)
old_numpy2=(numpy==2.2.6 scipy==1.15.3 ml-dtypes==0.6.0)
make_release_artifacts() {
  local v=$1 dest=.cache/jax-artifacts/$1 venv=.cache/venv-artifacts-$1
  shift
  [ -f "$dest/.complete" ] && return 0
  [ "$(uname -m)" = x86_64 ] || return 0
  say "making artifacts with JAX $v (its own venv) for the upgrade tests"
  rm -rf "$dest" "$venv"
  if ! python3 -m venv "$venv" >/dev/null 2>&1 ||
     ! "$venv/bin/python" -m pip install -q --disable-pip-version-check "jax==$v" \
         "jaxlib==$v" "$@" "${old_common[@]}" >/dev/null 2>".cache/pip-jax-$v.log"; then
    say "could not install JAX $v (PyPI unreachable?); its artifacts' tests will skip"
    rm -rf "$venv"
    return 0
  fi
  if "$venv/bin/python" tests/python/jax_artifacts.py "$dest" >".cache/jax-$v.log" 2>&1; then
    touch "$dest/.complete"
  else
    say "JAX $v could not make its artifacts (.cache/jax-$v.log); their tests will skip"
    rm -rf "$dest"
  fi
  rm -rf "$venv"
}
for v in 0.4.22 0.4.23 0.4.30; do make_release_artifacts "$v" "${old_numpy1[@]}"; done
make_release_artifacts 0.4.35 numpy==2.1.3 scipy==1.14.1 ml-dtypes==0.6.0
for v in 0.5.3 0.6.2 0.7.2; do make_release_artifacts "$v" "${old_numpy2[@]}"; done
# Real legacy source trees for scan's ground truth (tests/scan/
# test_scan_projects.py), each as its sdist on PyPI has it, under
# .cache/NAME-VERSION-src/: fetch_sdist NAME VERSION SHA256.
fetch_sdist() {
  local name=$1 version=$2 sha=$3 dest=.cache/$1-$2-src
  [ -f "$dest/.complete" ] && return 0
  [ -x .venv/bin/python ] || return 0
  say "fetching the $name $version sdist from PyPI (a real project's sources for the tests)"
  rm -rf "$dest"
  .venv/bin/python - "$name" "$version" "$sha" "$dest" 2>".cache/sdist-$name.log" <<'PY' ||
import hashlib, io, json, pathlib, sys, tarfile, urllib.request
name, version, sha, dest = sys.argv[1:]
index = json.load(urllib.request.urlopen(urllib.request.Request(
    f"https://pypi.org/simple/{name}/",
    headers={"Accept": "application/vnd.pypi.simple.v1+json"}), timeout=60))
want = f"{name}-{version}.tar.gz"
url = next(f["url"] for f in index["files"] if f["filename"] == want)
data = urllib.request.urlopen(url, timeout=300).read()
if hashlib.sha256(data).hexdigest() != sha:
    sys.exit(f"{want}: sha256 {hashlib.sha256(data).hexdigest()}, expected {sha}")
with tarfile.open(fileobj=io.BytesIO(data)) as tar:
    tar.extractall(dest, filter="data")
pathlib.Path(dest, ".complete").write_text(want + "\n")
PY
    { say "could not fetch $name $version (.cache/sdist-$name.log); its scan test will skip"
      rm -rf "$dest"; }
}
# mpi4jax 0.8.1.post2 (the last legacy release) and celerite2 0.3.2, both MIT.
fetch_sdist mpi4jax 0.8.1.post2 b8745825cfb59adf9ea35e48f6a55d997199e6a60b3d4f030908cd7d0c1c7c8d
fetch_sdist celerite2 0.3.2 91a90900037ab6e179f653a12d8d0c49fef1d0e9292b0dd5d0aa40ba00018415
# celerite2's built extension (its xla_ops module offers the capsules).
fetch_wheel celerite2 0.3.2
# mpi4jax's Cython extension built as its setup.py builds it, against the
# mpich and mpi4py wheels, in a copy (the scanned tree stays the sdist's).
build_mpi4jax() {
  local src=.cache/mpi4jax-0.8.1.post2-src/mpi4jax-0.8.1.post2 dest=.cache/mpi4jax-0.8.1.post2-build
  [ -f "$dest/.complete" ] && return 0
  [ -d "$src" ] && [ -x .venv/bin/mpicc ] || return 0
  say "building mpi4jax 0.8.1.post2's extension (scan's ground truth)"
  rm -rf "$dest" && cp -r "$src" "$dest"
  if (cd "$dest" && PATH="$PWD/../../.venv/bin:$PATH" ../../.venv/bin/python setup.py \
        build_ext --inplace) >".cache/build-mpi4jax.log" 2>&1 &&
     ls "$dest"/mpi4jax/_src/xla_bridge/mpi_xla_bridge_cpu.*.so >/dev/null 2>&1; then
    touch "$dest/.complete"
  else
    say "could not build mpi4jax's extension (.cache/build-mpi4jax.log); its scan test will skip"
  fi
}
build_mpi4jax
# veros 1.7.0 (MIT): its Cython TDMA kernels, registered with
# register_ffi_target(api_version=0) and lowered with mlir.custom_call, for
# the zero-change tests (tests/python/test_legacy_mode.py).  Built as its
# setup.py builds them, once per Python ABI: the pinned venv's 3.11, and
# 3.12 for the newest JAX and for JAX 0.11.2, the newest veros allows (a
# venv of its own, .cache/venv-jax-0.11.2).
fetch_sdist veros 1.7.0 4b430abeb08dba63dcff80a4f39949bbe1c125a5e93c477789f403859cb5509d
build_veros() {
  local python=$1 tag=$2 src=.cache/veros-1.7.0-src/veros-1.7.0
  local dest=.cache/veros-1.7.0-build-$2
  [ -f "$dest/.complete" ] && return 0
  [ -d "$src" ] && [ -x "$python" ] && "$python" -c "import Cython" 2>/dev/null || return 0
  say "building veros 1.7.0's Cython extension for $tag (the zero-change tests)"
  rm -rf "$dest" && cp -r "$src" "$dest"
  if (cd "$dest" && "$OLDPWD/$python" setup.py build_ext --inplace) \
       >".cache/build-veros-$tag.log" 2>&1 &&
     ls "$dest"/veros/core/special/tdma_cython_.*.so >/dev/null 2>&1; then
    touch "$dest/.complete"
  else
    say "could not build veros's extension (.cache/build-veros-$tag.log); its tests will skip"
  fi
}
veros_jax_pkgs=(jax==0.11.2 jaxlib==0.11.2 numpy==2.4.6 scipy==1.16.3 cython==3.3.1
                "${veros_model_pkgs[@]}")
make_veros_jax_venv() {
  local venv=.cache/venv-jax-0.11.2 stamp=.cache/venv-jax-0.11.2/.ccshim-requirements py312
  [ "$(cat "$stamp" 2>/dev/null)" = "${veros_jax_pkgs[*]}" ] && return 0
  py312=$(python_of 3.12)
  [ -n "$py312" ] || { say "no Python 3.12: veros is not tested on JAX 0.11.2"; return 0; }
  say "installing JAX 0.11.2 (the newest veros 1.7.0 allows) into $venv"
  rm -rf "$venv"
  if "$py312" -m venv "$venv" >/dev/null 2>&1 &&
     "$venv/bin/python" -m pip install -q --disable-pip-version-check "${veros_jax_pkgs[@]}" \
       >/dev/null 2>".cache/pip-jax-0.11.2.log"; then
    printf '%s' "${veros_jax_pkgs[*]}" >"$stamp"
    add_source_path "$venv" "$PWD/python" || true
  else
    say "could not install JAX 0.11.2 (PyPI unreachable?); veros on it will skip"
  fi
}
build_veros .venv/bin/python cp311
make_veros_jax_venv
build_veros .venv-newest/bin/python cp312
exit 0
