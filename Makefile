# The two commands of the quick start, and the steps behind them.
#
#   make demo   set-up, build, and the legacy kernels run through ccshim
#   make test   set-up, build, and every test
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
  -DCCSHIM_JAXLIB_INCLUDE="$(JAXLIB_INCLUDE)"
FUZZ_SECONDS ?= 60
THREADED_TESTS = test_adapter_threads test_invoke test_runtime_api
empty :=
space := $(empty) $(empty)
THREADED_RE = ^($(subst $(space),|,$(THREADED_TESTS)))$$

.PHONY: all setup build demo test test-c test-python test-wheel test-cmake test-sanitize test-fuzz \
        fuzz bench clean test-matrix format

all: build

setup:
	@bash tools/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCCSHIM_WERROR=ON \
	  -DCCSHIM_JAXLIB_INCLUDE="$(JAXLIB_INCLUDE)" -DCCSHIM_PYTHON_DEFAULT="$(abspath $(PYTHON))" \
	  $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory 2>&1 | { grep -Ev '^(\[|Consolidate|Scanning|Built target)' || true; }

demo: build
	@$(BUILD)/examples/ccshim_demo

# Every test: the C suite, the Python suite, a pip install used as a user
# would, the plain CMake path, the whole C suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer, the threaded tests under
# ThreadSanitizer, and each fuzzer for FUZZ_SECONDS.
test: build
	@$(MAKE) --no-print-directory test-c test-python test-wheel test-cmake test-sanitize test-fuzz

test-c: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The Python suite on the pinned JAX (.venv), then on the newest JAX
# (.venv-newest, Python 3.12), so that what breaks on today's JAX cannot land.
test-python: build
	@if $(PYTHON) -c 'import pytest' 2>/dev/null; then \
	  CCSHIM_BUILD_DIR=$(abspath $(BUILD)) $(PYTHON) -m pytest -q -p no:cacheprovider tests/python; \
	else echo "SKIPPED: the Python tests (pytest and JAX are not in .venv: PyPI unreachable?)"; fi
	@if .venv-newest/bin/python -c 'import pytest, jax' 2>/dev/null; then \
	  echo "== the Python suite on the newest JAX ($$(.venv-newest/bin/python -c 'import jax, sys; print(jax.__version__, "on Python", sys.version.split()[0])'))"; \
	  CCSHIM_BUILD_DIR=$(abspath $(BUILD)) .venv-newest/bin/python -m pytest -q -p no:cacheprovider tests/python; \
	else echo "SKIPPED: the Python tests on the newest JAX (no .venv-newest: no Python 3.12, or PyPI unreachable; tools/setup.sh said which)"; fi

# A user's install: pip install of this tree into a fresh venv, used from
# outside it (77: PyPI unreachable, reported as skipped).
test-wheel: setup
	@echo "== pip install of ccshim into a fresh venv, used as the README says"
	@bash tests/wheel/test_wheel.sh . python3; rc=$$?; \
	  if [ $$rc = 77 ]; then echo "SKIPPED: the wheel test (see the line above)"; \
	  elif [ $$rc != 0 ]; then exit $$rc; fi

# The plain CMake path: every documented option combination configures, and
# the default build (no jaxlib headers) passes ctest, skips aside.
test-cmake: setup
	@echo "== plain CMake: the documented option combinations, and the default build with ctest"
	@bash tools/test_cmake.sh $(JOBS)

test-sanitize: setup
	@echo "== the C suite under AddressSanitizer + UndefinedBehaviorSanitizer (clang)"
	@cmake -S . -B build-asan $(CLANG_FLAGS) -DCCSHIM_SANITIZE=address,undefined >/dev/null
	@cmake --build build-asan -j $(JOBS) -- --no-print-directory 2>&1 | { grep -Ev '^(\[|Consolidate|Scanning|Built target)' || true; }
	@cd build-asan && ctest --output-on-failure -j $(JOBS) -E 'install_consumer'
	@echo "== the threaded tests under ThreadSanitizer (clang)"
	@cmake -S . -B build-tsan $(CLANG_FLAGS) -DCCSHIM_SANITIZE=thread >/dev/null
	@cmake --build build-tsan -j $(JOBS) --target $(THREADED_TESTS) -- --no-print-directory 2>&1 | { grep -Ev '^(\[|Consolidate|Scanning|Built target)' || true; }
	@cd build-tsan && ctest --output-on-failure -R '$(THREADED_RE)'

test-fuzz: setup
	@echo "== the fuzzers, $(FUZZ_SECONDS)s each (libFuzzer, ASan, UBSan; clang; Atheris for ccshim.export)"
	@cmake -S . -B build-fuzz $(CLANG_FLAGS) -DCCSHIM_FUZZ=ON -DCCSHIM_SANITIZE=address,undefined >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target fuzz_adapter_frames fuzz_signature fuzz_frame_builder fuzz_scan fuzz_scan_tree fuzz_manifest -- --no-print-directory 2>&1 | { grep -Ev '^(\[|Consolidate|Scanning|Built target)' || true; }
	@bash tools/run_fuzzers.sh build-fuzz $(FUZZ_SECONDS) $(abspath $(PYTHON))

# The Python suite against a spread of JAX releases, each in its own venv
# (.venv-matrix/): the table in docs/jax-matrix.md and the README.  By hand:
# it downloads each release once.
test-matrix: build
	@bash tools/test_matrix.sh $(BUILD)

# Longer fuzzing, by hand.
fuzz:
	@$(MAKE) --no-print-directory test-fuzz FUZZ_SECONDS=600

# The README's figures: the per-call table and JSON, the JAX end-to-end
# ratio, and the chart.
bench: build
	@$(BUILD)/tools/ccshim bench --json bench/results.json | tee bench/results.txt
	@CCSHIM_BUILD_DIR=$(abspath $(BUILD)) $(PYTHON) bench/jax_e2e.py --json bench/e2e.json
	@$(PYTHON) bench/plot.py bench/results.json docs/bench.png

# Lays every tracked source out as .clang-format says (clang-format 14);
# test_format in ctest checks it.
format:
	@bash tools/format.sh --fix

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
