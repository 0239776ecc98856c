# The two commands of the quick start, and the steps behind them.
#
#   make demo   the demo's set-up (dev/setup.sh demo), the demo built and
#               run: legacy kernels through ccshim on the embedded runtime
#   make test   the tests' set-up (dev/setup.sh test), the build, and every
#               test, each stage timed (dev/stages.sh prints the table)
#   make wheel  the portable wheels, dist/ccshim-V-py3-none-manylinux_2_27_*.whl
#
# CMake does the building; this file only strings the steps together.

SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
PYTHON  := .venv/bin/python
# jaxlib's headers, for the tests that compile XLA's own FFI headers.
JAXLIB_INCLUDE = $(shell $(PYTHON) -c 'import jax; print(jax.ffi.include_dir())' 2>/dev/null)
CMAKE_FLAGS ?=
# Sanitizer and fuzzer builds use clang from Debian (setup installs it).
CLANG_FLAGS = -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCCSHIM_WERROR=ON \
  -DCCSHIM_JAXLIB_INCLUDE="$(JAXLIB_INCLUDE)" -DCCSHIM_PYTHON_DEFAULT="$(abspath $(PYTHON))"
# The ASan+UBSan build serves the C suite under the sanitizers and the
# fuzzers (CCSHIM_FUZZ adds coverage for libFuzzer and the libFuzzer
# binaries beside the corpus replays): one compile of the library, not two.
ASAN_FLAGS = $(CLANG_FLAGS) -DCCSHIM_SANITIZE=address,undefined -DCCSHIM_FUZZ=ON
# Each fuzzer's time in make test (two at a time on two cores), after its
# committed corpus is replayed whole: 10 s keeps make test within its 15
# minutes with a warm cache; make fuzz runs each for 10 minutes.
FUZZ_SECONDS ?= 6
# ccache, where the set-up could install it (dev/setup.sh test), for every
# compiler CMake runs from here, the wheel's and plain CMake's builds
# included: a second make test, or one in another clone, compiles almost
# nothing.  Paths are made relative to the tree, so clones share entries.
ifneq ($(shell command -v ccache 2>/dev/null),)
export CMAKE_C_COMPILER_LAUNCHER := ccache
export CMAKE_CXX_COMPILER_LAUNCHER := ccache
export CMAKE_CUDA_COMPILER_LAUNCHER := ccache
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1
endif
THREADED_TESTS = test_adapter_threads test_invoke test_runtime_api
empty :=
space := $(empty) $(empty)
THREADED_RE = ^($(subst $(space),|,$(THREADED_TESTS)))$$

.PHONY: all setup test-setup configure build demo test test-c test-python test-projects test-wheel test-cmake test-sanitize test-fuzz \
        fuzz bench clean test-matrix format test-gpu census wheel test-aarch64

all: build

# What the demo and the build need; the tests' set-up adds the rest.
setup:
	@bash dev/setup.sh demo

test-setup:
	@bash dev/setup.sh test

configure: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCCSHIM_WERROR=ON \
	  -DCCSHIM_JAXLIB_INCLUDE="$(JAXLIB_INCLUDE)" -DCCSHIM_PYTHON_DEFAULT="$(abspath $(PYTHON))" \
	  $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory 2>&1 | { grep -Ev '^(\[|Consolidate|Scanning|Built target)' || true; }

# Only what the demo runs is built: the library, the example kernels, the demo.
demo: configure
	@cmake --build $(BUILD) -j $(JOBS) --target ccshim_demo -- --no-print-directory 2>&1 | { grep -Ev '^(\[|Consolidate|Scanning|Built target)' || true; }
	@$(BUILD)/examples/ccshim_demo

# Every test: the C suite, the Python suite, a pip install used as a user
# would, the plain CMake path, the whole C suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer (but for the checks of the
# sources alone, ctest's label source, which make test-c ran), the threaded
# tests under ThreadSanitizer, and each fuzzer for FUZZ_SECONDS.  A fixture
# the set-up should have made is a failure here, not a skip
# (CCSHIM_FIXTURES_REQUIRED).
# The C suite and the wheel's, plain CMake's, the sanitizers' and the
# fuzzers' stages run alongside the Python suites (dev/stages.sh says why);
# the fuzzers after the sanitizers, whose build they share.  Beside the
# suites a fuzzer makes fewer executions in its 10 s than alone (each says
# how many); make fuzz runs them alone, for 10 minutes each.
TEST_STAGES = test-setup build test-python+test-c,test-wheel,test-cmake,test-sanitize,test-fuzz
test:
	@CCSHIM_FIXTURES_REQUIRED=1 bash dev/stages.sh $(TEST_STAGES)

test-c: test-setup build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The Python suite on the pinned JAX (.venv) and on the newest JAX
# (.venv-newest, Python 3.12), side by side.
test-python: test-setup build
	@bash dev/test_python.sh $(BUILD)

# Released projects' own test suites through ccshim.legacy on both JAX
# (test-python runs them on the newest), veros's model run on both, and
# veros's own suite, which only this runs: its suite is published
# only in its repository, fetched first (tests/fixtures/git_sources.tsv) from
# GitHub or from VEROS_FROM, a clone of it, and takes about 4 minutes a JAX.
# planet-harmonica's C++ headers, which its sdist lacks, come the same way
# (HARMONICA_FROM) for its ported build (tests/python/test_port_rules.py).
test-projects: test-setup build
	@python3 tests/fixtures/fetch.py --git veros $(VEROS_FROM)
	@python3 tests/fixtures/fetch.py --git planet-harmonica $(HARMONICA_FROM)
	@CCSHIM_FIXTURES_REQUIRED=1 CCSHIM_TEST_PROJECTS=1 \
	  bash dev/test_python.sh $(BUILD) tests/python/test_projects_own_suites.py \
	  tests/python/test_legacy_mode.py tests/python/test_port.py tests/python/test_port_rules.py \
	  tests/python/test_port_mpi4jax.py

# The census (dev/census/README.md): every released legacy extension in
# dev/census/projects/, its own suite through ccshim on today's JAX against
# its reference, ccshim scan of its tree; docs/census.md and the README's
# table written from the results.  Makes its venvs in the per-user cache.
census: test-setup build
	@python3 dev/census/census.py all

# The portable wheels, one per architecture (x86_64, aarch64): built with
# zig against glibc 2.27's symbol versions, Debian's static libffi inside
# (dev/wheel.py, docs/build.md), each shown to auditwheel.  An architecture
# whose libffi_pic.a the machine lacks is said and not built.
wheel:
	@bash dev/setup.sh wheel
	@.venv-wheel/bin/python dev/wheel.py --jobs $(JOBS)

# $(call skippable,WHAT,COMMAND): COMMAND's 77 said as WHAT skipped.
skippable = $(2); rc=$$?; if [ $$rc = 77 ]; then echo "SKIPPED: $(1) (see the line above)"; \
  elif [ $$rc != 0 ]; then exit $$rc; fi

# Users' installs.  Each portable wheel judged as PyPI and a user's machine
# would (tests/wheel/check_wheel.py: auditwheel, glibc symbol versions,
# nothing needed outside glibc and the wheel); the x86_64 one installed with
# pip --no-index into fresh venvs of Python 3.11, 3.12 and 3.13 and where
# libffi.so.8 is absent, and used there (tests/wheel/test_portable.sh); and
# pip install of this tree, the sdist's path (tests/wheel/test_wheel.sh).
test-wheel: test-setup wheel
	@for arch in x86_64 aarch64; do \
	  echo "== the $$arch wheel, judged as PyPI would judge it"; \
	  if wheel=$$(python3 dev/wheel.py --path $$arch); then \
	    python3 tests/wheel/check_wheel.py $$wheel .venv-wheel/bin/auditwheel || exit 1; \
	  elif [ $$arch = x86_64 ]; then exit 1; \
	  else echo "SKIPPED: the $$arch wheel's checks (see the line above)"; fi; \
	done
	@echo "== the x86_64 wheel, pip install --no-index into fresh venvs, used as the README says"
	@$(call skippable,the portable wheel's installs,bash tests/wheel/test_portable.sh .)
	@echo "== pip install of this tree into a fresh venv (the sdist's path), used as the README says"
	@$(call skippable,the pip install of this tree,bash tests/wheel/test_wheel.sh . python3)

# The C suite cross-built for aarch64 as the wheel is, run under qemu-user
# against the aarch64 wheel's library (tests/wheel/test_aarch64.sh).  Not in
# make test (its time would take make test past its budget); make test
# judges the aarch64 wheel with auditwheel.
test-aarch64: test-setup wheel
	@echo "== the C suite on aarch64 (qemu-user), against the aarch64 wheel's library"
	@$(call skippable,the aarch64 C suite,bash tests/wheel/test_aarch64.sh . $(JOBS))

# The plain CMake path: every documented option combination configures, and
# the default build (no jaxlib headers) passes ctest, skips aside.
test-cmake: test-setup
	@echo "== plain CMake: the documented option combinations, and the default build with ctest"
	@bash dev/test_cmake.sh $(JOBS)

test-sanitize: test-setup
	@echo "== the C suite under AddressSanitizer + UndefinedBehaviorSanitizer (clang)"
	@cmake -S . -B build-asan $(ASAN_FLAGS) >/dev/null
	@cmake --build build-asan -j $(JOBS) -- --no-print-directory 2>&1 | { grep -Ev '^(\[|Consolidate|Scanning|Built target)' || true; }
	@cd build-asan && ctest --output-on-failure -j $(JOBS) -E 'install_consumer' -LE source
	@echo "== the threaded tests under ThreadSanitizer (clang)"
	@cmake -S . -B build-tsan $(CLANG_FLAGS) -DCCSHIM_SANITIZE=thread >/dev/null
	@cmake --build build-tsan -j $(JOBS) --target $(THREADED_TESTS) -- --no-print-directory 2>&1 | { grep -Ev '^(\[|Consolidate|Scanning|Built target)' || true; }
	@cd build-tsan && ctest --output-on-failure -R '$(THREADED_RE)'

test-fuzz: test-setup
	@echo "== the fuzzers, $(FUZZ_SECONDS)s each (libFuzzer, ASan, UBSan; clang; Atheris for ccshim.export and ccshim.scan)"
	@cmake -S . -B build-asan $(ASAN_FLAGS) >/dev/null
	@cmake --build build-asan -j $(JOBS) --target fuzz_adapter_frames fuzz_signature fuzz_frame_builder fuzz_scan fuzz_scan_tree fuzz_manifest -- --no-print-directory 2>&1 | { grep -Ev '^(\[|Consolidate|Scanning|Built target)' || true; }
	@bash dev/run_fuzzers.sh build-asan $(FUZZ_SECONDS) $(abspath $(PYTHON))

# The Python suite against a spread of JAX releases, each in its own venv
# (.venv-matrix/): the table in docs/jax-matrix.md and the README.  By hand:
# it downloads each release once.
test-matrix: build
	@bash dev/test_matrix.sh $(BUILD)

# Everything ccshim does on an NVIDIA GPU, in one run of at most 10
# minutes there, ending in one table (docs/gpu.md); 77, said as skipped,
# where there is no GPU.  What a GPU machine that cannot fetch needs is put
# in .carry/ first (tests/gpu/prepare.sh, where PyPI and Debian are reachable).
test-gpu:
	@$(call skippable,make test-gpu,bash tests/gpu/test_gpu.sh)

# Longer fuzzing, by hand.
fuzz:
	@$(MAKE) --no-print-directory test-fuzz FUZZ_SECONDS=600

# The README's figures (the per-call tables and JSON, the JAX end-to-end
# ratio, and the chart) from the build users install:
# Release (-O3), with the wheel's compiler (zig cc) in build-bench-zig and
# the system's gcc in build-bench-gcc, not $(BUILD)'s RelWithDebInfo
# (dev/bench.sh).  The tests' set-up brings matplotlib, for the chart.
bench: test-setup
	@bash dev/setup.sh wheel
	@bash dev/bench.sh $(PYTHON)

# Lays every tracked source out as .clang-format says (clang-format 14);
# test_format in ctest checks it.
format:
	@bash dev/format.sh --fix

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz build-cmake build-sdist \
	  build-wheel-x86_64 build-wheel-aarch64 build-aarch64 build-gpu \
	  build-bench-gcc build-bench-zig
