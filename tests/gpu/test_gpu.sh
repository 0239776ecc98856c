#!/usr/bin/env bash
# make test-gpu: everything ccshim does on an NVIDIA GPU, in one run sized to
# finish within 10 minutes there, builds included, ending in one table.
# Exits 77 where there is no GPU (or no JAX with a CUDA backend).
#
#   build      ccshim with CUDA for the GPU's architecture (libffi from
#              .carry/libffi where its headers are missing), the CUDA
#              examples and the GPU benchmark's kernel
#   embedded   examples/legacy/add_gpu.cu through ccshim in the embedded
#              runtime, a real stream and device memory, beside the legacy
#              invoker (add_gpu_cuda)
#   jax        the same kernel in JAX: XLA's legacy GPU path, ccshim and its
#              native typed port, byte for byte (tests/gpu/jax_gpu.py)
#   memcheck   compute-sanitizer --tool memcheck on the embedded example and
#              on that JAX run (ccshim's and XLA's paths, no timing)
#   mpi4jax    mpi4jax 0.8.1.post2 built with its CUDA bridge against mpich
#              (the wheel, chosen explicitly: its libmpi.so.12 preloaded, for
#              children too), and its own test suite on 1 rank through
#              `python -m ccshim.legacy --strict --report`
#   port-kepler kepler_jax's kept port (dev/census/ports/), from
#              .carry/port-kepler-jax: built by its own build (with nvcc,
#              its CUDA gpu_ops), its own suite on the GPU in a Python where
#              ccshim cannot be imported, and every kepler call XLA compiled
#              read from its dump: typed, the CUDA ones among them
#   port-mpi4jax mpi4jax's kept port, from .carry/port-mpi4jax: built as
#              above, its CUDA kernels typed handlers now (its SYCL ones
#              legacy), its own suite on 1 rank on the GPU in a Python where
#              ccshim cannot be imported, and every mpi call XLA compiled
#              read from its dump: typed
#   port-veros veros's kept port, from .carry/port-veros: built by its own
#              setup.py with its CUDA extension (nvcc), beside the unported
#              build from .carry/veros-1.7.0; its TDMA on the GPU in a Python
#              where ccshim cannot be imported: the bytes of XLA's legacy
#              path, its CUDA targets typed in XLA's dump
#   census-KEY each GPU-only census project with a [gpu.suite] (dev/census/
#              gpu_suite.py list: flash-attn-jax 0.3.0, fdtdz 1.1.3): its own
#              suite (or the named selection its manifest gives) on XLA's
#              legacy path and through `ccshim legacy --strict --report`,
#              compared test by test, and its [gpu] CASES on both paths, byte
#              for byte; from .carry/census (not run unless asked for:
#              TEST_GPU_ONLY=census, or census-KEY, as it is carried apart)
#   bench      bench/jax_gpu.py: XLA's legacy path, ccshim and a hand-written
#              typed handler of one kernel, per call in a loop and at 16M
#              elements, interleaved, best of 15
#
# TEST_GPU_SECONDS (default 570) bounds the whole run; TEST_GPU_ONLY="STEP..."
# runs only those steps after the build (a name before a digit or a dash
# names them all: memcheck, census).  Needs nvcc, cmake, and a Python 3.12 with JAX and its CUDA plugin (PYTHON,
# default python3), pytest and Cython; what such a machine cannot fetch is in
# .carry/ (tests/gpu/prepare.sh, run where PyPI and Debian are reachable).
# Logs and the table go to LOGS (default build-gpu/logs; the device tool's
# $OUT, so that they come back).
#
# usage: tests/gpu/test_gpu.sh [BUILD_DIR]   (default build-gpu)
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/gpu/common.sh
root=$PWD
build=${1:-build-gpu}
python=${PYTHON:-python3}
logs=${LOGS:-$build/logs}
# Every step's limit is cut to what is left of this, so that the table is
# written whole within the 10 minutes a GPU machine is lent for.
budget=${TEST_GPU_SECONDS:-570}
started=$SECONDS

if ! gpu_here; then
  echo "skipped: no NVIDIA GPU here"
  exit 77
fi
if ! "$python" -c 'import jax; jax.devices("cuda")' >/dev/null 2>&1; then
  echo "skipped: $python has no JAX with a CUDA backend"
  exit 77
fi
mkdir -p "$logs" "$build"
logs=$(cd "$logs" && pwd)
# A GPU machine that can fetch makes .carry/ itself.
census_asked=()
[[ " ${TEST_GPU_ONLY:-} " == *" census"* && ! -d .carry/census ]] && census_asked=(--census)
if ! carried_mpi4jax || [ ! -d .carry/port-mpi4jax ] || [ ! -d .carry/port-veros ] ||
  [ ${#census_asked[@]} -gt 0 ]; then
  bash tests/gpu/prepare.sh "${census_asked[@]}" >"$logs/prepare.log" 2>&1 ||
    echo "tests/gpu/prepare.sh could not fetch what .carry/ lacks ($logs/prepare.log)"
fi
export root build python logs
# the projects' own builds find CUDA by nvcc on PATH (mpi4jax's setup.py,
# kepler_jax's and fdtdz's CMake)
[ -x /usr/local/cuda/bin/nvcc ] && export PATH=$PATH:/usr/local/cuda/bin
# a Python that dies says where, and what it printed before is in its log
export PYTHONFAULTHANDLER=1 PYTHONUNBUFFERED=1
table=$logs/table.txt
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)
jax_version=$("$python" -c 'import jax; print(jax.__version__)')
{
  echo "make test-gpu, $(date -u +%Y-%m-%d), $gpu, JAX $jax_version, $("$python" -V 2>&1)"
  printf '%-22s %-5s %6s  %s\n' step result secs detail
} >"$table"
failed=0

# step NAME LIMIT_SECONDS SUMMARY_COMMAND -- COMMAND...: runs COMMAND (a
# program or a function of this file) under a time limit, its output in
# LOGS/NAME.log; the table gets its result, its time and the line
# SUMMARY_COMMAND prints from the log (on stdin).
step() {
  local name=$1 limit=$2 summary=$3 t0=$SECONDS rc result detail='' left
  shift 4
  # Not asked for (TEST_GPU_ONLY="mpi4jax bench": those, after the build);
  # memcheck1 and memcheck2 are the step the header calls memcheck.
  if [ -n "${TEST_GPU_ONLY:-}" ] && [[ " build $TEST_GPU_ONLY " != *" $name "* &&
    " $TEST_GPU_ONLY " != *" ${name%%[0-9]*} "* && " $TEST_GPU_ONLY " != *" ${name%%-*} "* ]]; then
    return 0
  fi
  # the census steps travel with a carry of their own: only when asked for
  if [[ $name == census-* && " ${TEST_GPU_ONLY:-} " != *" census "* &&
    " ${TEST_GPU_ONLY:-} " != *" $name "* ]]; then
    printf '%-22s %-5s %6d  %s\n' "$name" SKIP 0 "carried apart: TEST_GPU_ONLY=census" |
      tee -a "$table"
    return 0
  fi
  left=$((budget - (SECONDS - started)))
  if [ $left -lt 20 ]; then
    printf '%-22s %-5s %6d  %s\n' "$name" SKIP 0 "out of time (TEST_GPU_SECONDS=$budget)" |
      tee -a "$table"
    failed=1
    return 1
  fi
  [ "$limit" -le $left ] || limit=$left
  echo "== $name"
  timeout --kill-after=10 "$limit" bash -c '"$@"' step "$@" >"$logs/$name.log" 2>&1
  rc=$?
  case $rc in
    0) result=PASS ;;
    124 | 137) result=TIME detail="over ${limit}s; " ;;
    *) result=FAIL ;;
  esac
  [ $rc = 0 ] || failed=1
  detail="$detail$(eval "$summary" <"$logs/$name.log" | tr '\n' ' ' | cut -c1-160)"
  printf '%-22s %-5s %6d  %s\n' "$name" "$result" $((SECONDS - t0)) "$detail" | tee -a "$table"
  [ $rc = 0 ] || tail -n 15 "$logs/$name.log"
  return $rc
}

build_all() {
  libffi_or_carried && build_examples "$build" "$python" ccshim_bench_gpu
}
export -f libffi_or_carried cuda_architecture build_gpu build_examples carried_mpi4jax build_all
if ! step build 300 "grep -E '^libffi from' || echo 'arch $(cuda_architecture)'" -- build_all; then
  echo "the build failed: nothing else can run" | tee -a "$table"
  cat "$table"
  exit 1
fi

with_ccshim=(env CCSHIM_LIBRARY="$root/$build/libccshim.so" PYTHONPATH="$root/python"
             XLA_PYTHON_CLIENT_PREALLOCATE=false)
examples=$build/examples
step embedded 60 "grep -iE 'identical|differ|error' | head -n 2" -- "$examples/add_gpu_cuda"
step jax 180 "grep -E 'byte|alike|fori_loop'" -- "${with_ccshim[@]}" "$python" \
  tests/gpu/jax_gpu.py "$examples/libccshim_example_gpu_cuda.so" \
  --ported "$examples/libmigration_ported_gpu.so"

# machine_venv VENV [WHEEL...]: a venv that sees the machine's JAX (a .pth
# file naming PYTHON's site-packages: PYTHON may be a venv itself, whose
# packages --system-site-packages would not see) and holds the WHEELs;
# prints its site-packages.
machine_venv() {
  local venv=$1 site
  shift
  rm -rf "$venv"
  "$python" -m venv --without-pip "$venv" || return 1
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  # (site.addsitedir: the machine's own .pth files are read too)
  "$python" -c 'import site; print("".join(f"import site; site.addsitedir({p!r})\n"
                                           for p in site.getsitepackages()))' \
    >"$site/machine-site.pth" || return 1
  if [ $# -gt 0 ]; then
    "$python" -m pip install -q --disable-pip-version-check --no-index --no-deps \
      --ignore-installed --prefix "$venv" "$@" >&2 || return 1
  fi
  echo "$site"
}
export -f machine_venv

# mpi4jax: a venv of its own, which sees the machine's JAX (a .pth file
# naming PYTHON's site-packages) and holds mpich and mpi4py from
# .carry/wheels: mpi4py looks for libmpi in its venv's lib/ first, so mpich's
# is chosen over another MPI the machine has (Open MPI's libmpi.so.40), in the
# children its tests start with an environment of their own too.  mpi4jax's
# sdist from .carry built in place with mpich's mpicc (and nvcc's CUDA, for its
# bridge), its suite run as published from a copy of its tests.
#
# build_mpi4jax FROM SRC VENV: the venv, and the tree FROM copied to SRC and
# built there; prints mpich's libmpi.so.12.
build_mpi4jax() {
  local from=$1 src=$2 venv=$3 libmpi
  machine_venv "$venv" "$root"/.carry/wheels/{mpich,mpi4py}-*.whl >/dev/null || return 1
  libmpi=$(find "$venv/lib" -maxdepth 1 -name 'libmpi.so.12' | head -n 1)
  [ -n "$libmpi" ] || { echo "the mpich wheel put no libmpi.so.12 in $venv/lib" >&2; return 1; }
  "$venv/bin/python" -c 'from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0])' >&2
  rm -rf "$src" && cp -r "$from" "$src"
  # --library-dirs: mpich's lib/ first on the link line.  setuptools adds the
  # Python's LIBDIR (a Debian or Ubuntu python3's is /usr/lib/x86_64-linux-gnu)
  # as -L before the -L mpicc appends, so -lmpi found Open MPI's libmpi.so
  # there and the bridges needed libmpi.so.40, which their children, with no
  # preload, called into (checked on CPU with such a -L: 'MPI_Send() was
  # called before MPI_INIT').
  (cd "$src" && PATH="$venv/bin:$PATH" MPI4JAX_BUILD_MPICC="$venv/bin/mpicc" \
    "$venv/bin/python" setup.py build_ext --inplace --library-dirs "$venv/lib" \
    >build.log 2>&1) || { tail -n 20 "$src/build.log" >&2; return 1; }
  compgen -G "$src/mpi4jax/_src/xla_bridge/mpi_xla_bridge_cuda.*.so" >/dev/null ||
    { echo "mpi4jax's CUDA bridge was not built" >&2; return 1; }
  local bridge needs
  for bridge in "$src"/mpi4jax/_src/xla_bridge/mpi_xla_bridge*.so; do
    needs=$(readelf -d "$bridge" | grep -o 'libmpi[^]]*' | tr '\n' ' ')
    echo "$(basename "$bridge") needs: $needs" >&2
    [[ $needs == *libmpi.so.12* && $needs != *libmpi.so.40* ]] ||
      { echo "$(basename "$bridge") is not linked against mpich's libmpi.so.12" >&2; return 1; }
  done
  echo "$libmpi"
}
export -f build_mpi4jax

mpi4jax_suite() {
  local venv=$root/$build/venv-mpi src=$root/$build/mpi4jax suite libmpi
  carried_mpi4jax ||
    { echo "no .carry/mpi4jax-0.8.1.post2 or .carry/wheels (tests/gpu/prepare.sh)"; return 1; }
  libmpi=$(build_mpi4jax "$root/.carry/mpi4jax-0.8.1.post2" "$src" "$venv") || return 1
  suite=$root/$build/mpi4jax-suite
  rm -rf "$suite" && mkdir -p "$suite" &&
    cp -r "$src/tests" "$src/examples" "$src/pyproject.toml" "$suite/"
  rm -f "$logs/mpi4jax-report.tsv"
  # mpich's libmpi preloaded too, and on the library path for the children
  (cd "$suite" && LD_PRELOAD="$libmpi" LD_LIBRARY_PATH="$venv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    MPI4JAX_USE_CUDA_MPI=0 PATH="$venv/bin:$PATH" \
    CCSHIM_LIBRARY="$root/$build/libccshim.so" PYTHONPATH="$root/python:$src" \
    "$venv/bin/python" -m ccshim.legacy --strict \
    --report "$logs/mpi4jax-report.tsv" -m pytest -q -p no:cacheprovider tests \
    --junitxml="$logs/mpi4jax-junit.xml")
  local rc=$? kernels
  # Which MPI a child started as its tests start theirs (HOME, PATH,
  # PYTHONPATH and LD_LIBRARY_PATH kept, nothing else, and here no ccshim
  # legacy parent to carry the preload) loads, when, and which object
  # brought Open MPI's in (the dynamic linker's own account, LD_DEBUG=files:
  # "needed by" or "dynamically loaded by"); whether Open MPI's MPI_* are in
  # the global scope, where they would come before a bridge's own libmpi.
  echo "a child with its tests' environment, no preload carried, maps:"
  (cd "$suite" && env -i HOME="$HOME" PATH="$venv/bin:$PATH" PYTHONPATH="$root/python:$src" \
    LD_DEBUG=files LD_DEBUG_OUTPUT="$logs/mpi4jax-child-ld" \
    LD_LIBRARY_PATH="$venv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    CCSHIM_LIBRARY="$root/$build/libccshim.so" "$venv/bin/python" -m ccshim.legacy -c '
import ctypes
def mpi(when):
    libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if "libmpi" in l})
    ompi = hasattr(ctypes.CDLL(None), "ompi_mpi_comm_self")
    print(f"  {when}: {libs}; Open MPI in the global scope: {ompi}")
mpi("at start")
import jax
mpi("after import jax")
from mpi4py import MPI
mpi("after mpi4py.MPI: " + MPI.Get_library_version().splitlines()[0])
import mpi4jax
mpi("after import mpi4jax")' 2>&1 | grep -v Warning)
  echo "what brought libmpi.so.40 in (LD_DEBUG=files):"
  cat "$logs"/mpi4jax-child-ld.* 2>/dev/null | grep -E 'file=[^ ]*libmpi\.so' |
    sed 's/^ *[0-9]*:[[:space:]]*//' | sort -u >"$logs/mpi4jax-child-libmpi.txt"
  rm -f "$logs"/mpi4jax-child-ld.*
  grep -E 'libmpi\.so\.40' "$logs/mpi4jax-child-libmpi.txt" | head -n 5
  kernels=$(cut -f2,3 "$logs/mpi4jax-report.tsv" 2>/dev/null | grep -c $'^cuda\tccshim.v2.mpi_')
  echo "cuda kernels through ccshim: $kernels"
  [ "$kernels" -ge 10 ] || { echo "expected its 10 collectives on cuda"; rc=1; }
  return $rc
}
export -f mpi4jax_suite
step mpi4jax 420 "grep -E '(passed|failed|error)|cuda kernels' | tail -n 2" -- mpi4jax_suite

# A port's suite on the GPU: pytest ARGS... in the current folder, by PYTHON
# (its venv's), which must not be able to import ccshim; XLA's dump to DUMP.
suite_without_ccshim() {
  local python=$1 dump=$2
  shift 2
  XLA_FLAGS="--xla_dump_to=$dump --xla_dump_hlo_as_text" "$python" - "$@" <<'PY'
import sys
try:
    import ccshim
    sys.exit("ccshim can be imported here")
except ImportError:
    pass
import jax, pytest
print("default backend:", jax.default_backend())
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]]))
PY
}

# dump_typed DUMP WHAT GPU_TARGETS: the custom calls XLA compiled (its
# after_optimizations modules in DUMP) whose target matches WHAT are all
# typed (API version 4), and some of the modules it compiled for the GPU
# (every one but XLA:CPU's, *cpu_after_optimizations.txt) call GPU_TARGETS (a
# regular expression): mpi4jax's CPU and CUDA targets have the same names.
dump_typed() {
  local dump=$1 what=$2 gpu=$3 calls untyped f
  local compiled=("$dump"/*after_optimizations.txt)
  [ -e "${compiled[0]}" ] || { echo "no compiled module in $dump"; return 1; }
  calls=$(for f in "${compiled[@]}"; do [[ $f == *cpu_after_optimizations.txt ]] || cat "$f"; done |
    grep ' custom-call(' | grep -cE "custom_call_target=\"$gpu")
  untyped=$(cat "${compiled[@]}" | grep ' custom-call(' | grep -E "custom_call_target=\"$what" |
    grep -vc 'api_version=API_VERSION_TYPED_FFI')
  echo "$gpu calls compiled for the GPU: $calls; $what calls not typed: $untyped"
  [ "$calls" -gt 0 ] && [ "$untyped" -eq 0 ]
}
export -f suite_without_ccshim dump_typed

# kepler_jax's kept port on the GPU: its ported CUDA kernels through the
# handlers `ccshim port` wrote, nothing of ccshim there.
port_kepler() {
  local src=$root/.carry/port-kepler-jax venv=$root/$build/venv-port
  local site=$root/$build/port-kepler-site dump=$root/$build/port-kepler-hlo tools
  [ -d "$src" ] || { echo "no .carry/port-kepler-jax (tests/gpu/prepare.sh)"; return 1; }
  rm -rf "$site" "$dump"
  # its build backend and pybind11 (its build-system's requires), carried
  tools=$(machine_venv "$venv" "$root"/.carry/wheels/{scikit_build_core,setuptools_scm,setuptools,pathspec,packaging,pybind11}-*.whl) ||
    return 1
  # pip's own build, not isolated: its backend runs in PYTHON, with the
  # carried tools first on its path; its CMake finds pybind11 by pybind11_DIR
  PYTHONPATH="$tools" SETUPTOOLS_SCM_PRETEND_VERSION=0.1.dev56+g371dca9 \
    CMAKE_ARGS="-Dpybind11_DIR=$(PYTHONPATH="$tools" "$python" -m pybind11 --cmakedir)" \
    "$python" -m pip install -q --disable-pip-version-check --no-index --no-deps \
    --no-build-isolation --target "$site" "$src" || return 1
  compgen -G "$site/kepler_jax/gpu_ops*.so" >/dev/null ||
    { echo "its build made no gpu_ops: was nvcc found?"; return 1; }
  (cd "$src" && PYTHONPATH="$site" suite_without_ccshim "$venv/bin/python" "$dump" tests) ||
    return 1
  dump_typed "$dump" '[a-z_]*kepler_' gpu_kepler_
}
export -f port_kepler
step port-kepler 240 "grep -E 'passed|failed|gpu_kepler_ calls' | tail -n 2" -- port_kepler

# mpi4jax's kept port on the GPU: its CUDA kernels through the handlers
# `ccshim port` wrote (its SYCL kernels, a void* stream, stay legacy), built
# as mpi4jax is above, its suite on one rank in a Python where ccshim cannot
# be imported, and every mpi call XLA compiled read from its dump: typed.
port_mpi4jax() {
  local venv=$root/$build/venv-mpi-port src=$root/$build/port-mpi4jax
  local suite=$root/$build/port-mpi4jax-suite dump=$root/$build/port-mpi4jax-hlo libmpi
  [ -d "$root/.carry/port-mpi4jax" ] ||
    { echo "no .carry/port-mpi4jax (tests/gpu/prepare.sh)"; return 1; }
  libmpi=$(build_mpi4jax "$root/.carry/port-mpi4jax" "$src" "$venv") || return 1
  rm -rf "$suite" "$dump" && mkdir -p "$suite" &&
    cp -r "$src/tests" "$src/examples" "$src/pyproject.toml" "$suite/"
  (cd "$suite" && LD_PRELOAD="$libmpi" LD_LIBRARY_PATH="$venv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    MPI4JAX_USE_CUDA_MPI=0 PATH="$venv/bin:$PATH" PYTHONPATH="$src" \
    suite_without_ccshim "$venv/bin/python" "$dump" tests) || return 1
  dump_typed "$dump" mpi_ mpi_
}
export -f port_mpi4jax
step port-mpi4jax 300 "grep -E 'passed|failed|mpi_ calls' | tail -n 2" -- port_mpi4jax

# veros's kept port on the GPU: its CUDA TDMA kernels through the handlers
# `ccshim port` wrote (their call typed in place, its layouts, the last
# dimension major, kept), beside the unported build on XLA's legacy path.
# Both built by veros's own setup.py (build_ext --inplace, its CUDA
# extension required); veros's own tdma_ run as its solvers call it
# (tests/python/veros_tdma_program.py: 6x5 systems of 16, float64 and
# float32) in a Python where ccshim cannot be imported: the same bytes, its
# CUDA targets called, and every tdma call XLA compiled typed.
build_veros() {
  local from=$1 dest=$2
  rm -rf "$dest" && cp -r "$from" "$dest" || return 1
  (cd "$dest" && VEROS_REQUIRE_CYTHON_EXT=1 VEROS_REQUIRE_CUDA_EXT=1 \
    "$python" setup.py build_ext --inplace >build.log 2>&1) ||
    { tail -n 20 "$dest/build.log"; return 1; }
  compgen -G "$dest/veros/core/special/tdma_cuda_.*.so" >/dev/null ||
    { echo "$dest: no tdma_cuda_ extension built"; return 1; }
}
port_veros() {
  local legacy=$root/$build/veros-legacy ported=$root/$build/veros-port
  local dump=$root/$build/port-veros-hlo program=$root/tests/python/veros_tdma_program.py
  [ -d "$root/.carry/veros-1.7.0" ] && [ -d "$root/.carry/port-veros" ] ||
    { echo "no .carry/veros-1.7.0 or .carry/port-veros (tests/gpu/prepare.sh)"; return 1; }
  ! "$python" -c 'import ccshim' 2>/dev/null || { echo "ccshim can be imported here"; return 1; }
  build_veros "$root/.carry/veros-1.7.0" "$legacy" && build_veros "$root/.carry/port-veros" \
    "$ported" || return 1
  rm -rf "$dump"
  "$python" "$program" xla "$legacy" >"$logs/port-veros-legacy.json" || return 1
  XLA_FLAGS="--xla_dump_to=$dump --xla_dump_hlo_as_text" \
    "$python" "$program" xla "$ported" >"$logs/port-veros-ported.json" || return 1
  "$python" - "$logs/port-veros-legacy.json" "$logs/port-veros-ported.json" <<'PY' || return 1
import json, sys
legacy, ported = (json.loads(open(p).read().strip().splitlines()[-1]) for p in sys.argv[1:])
want = {"float64": ["tdma_cuda_double"], "float32": ["tdma_cuda_float"]}
print("targets:", ported["targets"], "; largest difference from scipy:", ported["scipy_error"])
same = ported["outputs"] == legacy["outputs"]
print("the same bytes as the unported build on XLA's legacy path:", same)
sys.exit(0 if same and ported["targets"] == legacy["targets"] == want else 1)
PY
  dump_typed "$dump" tdma_ tdma_cuda_
}
export -f build_veros port_veros
step port-veros 300 "grep -E 'same bytes|tdma_cuda_ calls' | tail -n 2" -- port_veros

# The census on a GPU: a GPU-only project's own suite on XLA's legacy path
# and through ccshim, in a venv of its own that sees the machine's JAX and
# holds the project's wheels from .carry/census/KEY (fdtdz: built there from
# its sdist with nvcc), compared test by test (dev/census/gpu_suite.py).
census_suite() {
  local key=$1 carried=$root/.carry/census/$1 venv=$root/$build/venv-$1 suite=$root/$build/suite-$1
  local out=$logs/census-$1 site pkg rc=0 libpath='' d
  local gs=("$python" "$root/dev/census/gpu_suite.py")
  [ -d "$carried" ] || { echo "no $carried (tests/gpu/prepare.sh)"; return 1; }
  rm -rf "$suite" "$out" && mkdir -p "$suite" "$out"
  local wheels=()
  compgen -G "$carried/*.whl" >/dev/null && wheels=("$carried"/*.whl)
  site=$(machine_venv "$venv" "${wheels[@]}") || return 1
  if [ "$("${gs[@]}" get "$key" tests)" = sdist ]; then
    tar -xzf "$carried"/*.tar.gz -C "$suite" || return 1
    pkg=$(find "$suite" -maxdepth 1 -mindepth 1 -type d | head -n 1)
    # its own setup.py (the machine's CMake and nvcc; pybind11, setuptools,
    # setuptools-scm and wheel from the carry, in the venv's site)
    (cd "$pkg" && PYTHONPATH="$site" "$python" -m pip install -q --disable-pip-version-check \
      --no-deps --no-build-isolation --no-index --prefix "$venv" . >"$out/build.log" 2>&1) ||
      { tail -n 20 "$out/build.log"; return 1; }
    cp -r "$pkg/tests" "$suite/tests" && rm -rf "$pkg"
  else
    cp -r "$carried/tests" "$suite/tests"
  fi
  while read -r d; do [ -n "$d" ] && libpath=$libpath${libpath:+:}$site/$d; done \
    < <("${gs[@]}" get "$key" library_path)
  local -a args
  mapfile -t args < <("${gs[@]}" get "$key" pytest)
  echo "selection: $("${gs[@]}" get "$key" selection)"
  local env=(env LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
             XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONPATH="$root/dev/census")
  local ccshim=(-m ccshim.legacy --strict --report "$out/report.tsv")
  local each=$(( $("${gs[@]}" get "$key" timeout) ))
  if [ "$("${gs[@]}" get "$key" legacy)" = False ]; then
    echo "== XLA's legacy path: not run: $("${gs[@]}" get "$key" legacy_why)"
  else
    echo "== XLA's legacy path"
    (cd "$suite" && timeout "$each" "${env[@]}" "$venv/bin/python" -m pytest -q \
      -p no:cacheprovider "${args[@]}" --junitxml="$out/legacy.xml" | tail -n 3)
    (cd "$suite" && "${env[@]}" "$venv/bin/python" "$root/dev/census/gpu_suite.py" outputs \
      "$key" "$out/legacy.npz") || rc=1
  fi
  echo "== through ccshim legacy --strict"
  (cd "$suite" && timeout "$each" "${env[@]}" CCSHIM_LIBRARY="$root/$build/libccshim.so" \
    PYTHONPATH="$root/python:$root/dev/census" "$venv/bin/python" "${ccshim[@]}" -m pytest -q \
    -p no:cacheprovider "${args[@]}" --junitxml="$out/ccshim.xml" | tail -n 3)
  (cd "$suite" && "${env[@]}" CCSHIM_LIBRARY="$root/$build/libccshim.so" \
    PYTHONPATH="$root/python:$root/dev/census" "$venv/bin/python" "${ccshim[@]}" \
    "$root/dev/census/gpu_suite.py" outputs "$key" "$out/ccshim.npz") || rc=1
  "${gs[@]}" compare "$key" "$out" || rc=1
  return $rc
}
export -f census_suite
while read -r key; do
  step "census-${key%-*}" 570 "grep -E '^$key: ' | tail -n 1" -- census_suite "$key"
done < <(cd "$root/dev/census" && "$python" gpu_suite.py list)

step bench 240 "grep -E 'same bytes|^(legacy|ccshim|typed|xla add)' " -- \
  "${with_ccshim[@]}" "$python" bench/jax_gpu.py "$build/bench/libccshim_bench_gpu.so" \
  --json "$logs/bench.json"

memcheck=(compute-sanitizer --tool memcheck --error-exitcode 3)
if command -v compute-sanitizer >/dev/null; then
  step memcheck1 120 "grep -E 'ERROR SUMMARY' | tail -n 1" -- "${memcheck[@]}" \
    "$examples/add_gpu_cuda"
  step memcheck2 300 "grep -E 'ERROR SUMMARY|PASS|FAIL' | tail -n 2" -- "${with_ccshim[@]}" \
    "${memcheck[@]}" "$python" tests/gpu/jax_gpu.py "$examples/libccshim_example_gpu_cuda.so" \
    --no-timing
else
  printf '%-22s %-5s %6s  %s\n' memcheck SKIP 0 "no compute-sanitizer here" | tee -a "$table"
fi

echo "total: $((SECONDS - started)) s" >>"$table"
echo
cat "$table"
exit $failed
