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

.PHONY: all setup build demo test test-c clean

all: build

setup:
	@bash tools/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCCSHIM_WERROR=ON \
	  -DCCSHIM_JAXLIB_INCLUDE="$(JAXLIB_INCLUDE)" $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory 2>&1 | { grep -Ev '^(\[|Consolidate|Scanning|Built target)' || true; }

demo: build
	@$(BUILD)/examples/ccshim_demo

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@if $(PYTHON) -c 'import pytest' 2>/dev/null; then \
	  CCSHIM_BUILD_DIR=$(abspath $(BUILD)) $(PYTHON) -m pytest -q -p no:cacheprovider tests/python; \
	else echo "SKIPPED: the Python tests (pytest and JAX are not in .venv: PyPI unreachable?)"; fi

clean:
	rm -rf $(BUILD)
