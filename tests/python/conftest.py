"""Shared set-up for the JAX tests: eight host devices (before JAX loads),
the build's libraries, and the versions in the report header."""

import os
import pathlib
import re

# shard_map over 8 host devices needs this before JAX is imported.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("CCSHIM_BUILD_DIR", ROOT / "build")).resolve()
os.environ.setdefault("CCSHIM_LIBRARY", str(BUILD / "libccshim.so"))

# JAX comes from PyPI into .venv; these tests skip only where it could not.
jax = pytest.importorskip("jax", reason="JAX is not installed (PyPI unreachable?)")
import jaxlib  # noqa: E402

import ccshim  # noqa: E402


def runtime_ffi_version() -> tuple[int, int]:
    """The FFI API version of the installed jaxlib, from its own header."""
    text = (pathlib.Path(jax.ffi.include_dir()) / "xla/ffi/api/c_api.h").read_text()
    major = int(re.search(r"#define XLA_FFI_API_MAJOR (\d+)", text).group(1))
    minor = int(re.search(r"#define XLA_FFI_API_MINOR (\d+)", text).group(1))
    return major, minor


def pytest_report_header(config):
    major, minor = runtime_ffi_version()
    return (f"jax {jax.__version__}, jaxlib {jaxlib.__version__} (FFI API "
            f"{major}.{minor}); libccshim {ccshim.version()} from {BUILD}")


@pytest.fixture(scope="session")
def kernels():
    """The legacy kernels of tests/python/kernels.c, built without ccshim."""
    return ccshim.load_legacy_library(BUILD / "tests" / "libccshim_pytest_kernels.so")


@pytest.fixture(scope="session")
def build_dir():
    return BUILD
