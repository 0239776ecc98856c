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
             matplotlib==3.11.2)

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
exit 0
