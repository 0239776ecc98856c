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

required_debs=(gcc g++ make cmake pkg-config libffi-dev python3-venv)
optional_debs=(clang libclang-rt-14-dev clang-format-14 valgrind libopenblas-dev
               hipcc libamdhip64-dev)
# Pinned so that every run tests the same thing.  jax 0.10.2 is the newest
# release for this machine's Python 3.11 (FFI API 0.3).
python_pkgs=(jax==0.10.2 jaxlib==0.10.2 numpy==2.4.6 pytest==9.2.0
             matplotlib==3.11.2 scipy==1.16.3)
# Real legacy kernels for the tests: jaxlib 0.4.30's CPU LAPACK/BLAS
# capsules (legacy v2 kernels, with its first typed-FFI ones mixed in), run
# unchanged through XLA's legacy path and through ccshim.  Only the module
# and its licence are kept, under .cache/ (never committed).
old_jaxlib=0.4.30

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
# The ccshim Python package itself, from this tree: a .pth file in the
# venv's site-packages makes python/ importable, which is all an editable
# install does, without needing a build backend or the network.
if [ -d python/ccshim ]; then
  .venv/bin/python - "$PWD/python" <<'PY' || say "could not add python/ to .venv"
import pathlib, site, sys
pth = pathlib.Path(site.getsitepackages()[0]) / "ccshim-source.pth"
if not pth.exists() or pth.read_text().strip() != sys.argv[1]:
    pth.write_text(sys.argv[1] + "\n")
PY
fi
# The old jaxlib's kernels (x86-64 Linux wheels only; CPython 3.11 ABI).
old_dir=.cache/jaxlib-$old_jaxlib
if [ ! -f "$old_dir/jaxlib/cpu/_lapack.so" ] && [ -x .venv/bin/python ] &&
   [ "$(uname -m)" = x86_64 ]; then
  say "fetching jaxlib $old_jaxlib's CPU kernels (real legacy kernels for the tests)"
  mkdir -p .cache/wheels
  if .venv/bin/python -m pip download -q --disable-pip-version-check --no-deps \
       --only-binary=:all: --python-version 3.11 --platform manylinux2014_x86_64 \
       -d .cache/wheels "jaxlib==$old_jaxlib" >/dev/null 2>.cache/pip-old-jaxlib.log; then
    .venv/bin/python - ".cache/wheels/jaxlib-$old_jaxlib-cp311-cp311-manylinux2014_x86_64.whl" \
        "$old_dir" <<'PY' || say "could not unpack jaxlib $old_jaxlib; its tests will skip"
import sys, zipfile
wheel, dest = sys.argv[1:3]
keep = ["jaxlib/cpu/_lapack.so", "jaxlib/lapack.py",
        f"jaxlib-{dest.rsplit('-', 1)[1]}.dist-info/LICENSE.txt"]
with zipfile.ZipFile(wheel) as z:
    for name in keep:
        z.extract(name, dest)
PY
    rm -f .cache/wheels/jaxlib-"$old_jaxlib"-*.whl
  else
    say "could not download jaxlib $old_jaxlib (PyPI unreachable?); its tests will skip"
  fi
fi
exit 0
