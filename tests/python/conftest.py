"""Shared set-up for the JAX tests: eight host devices (before JAX loads),
the build's libraries, and the versions in the report header."""

import os
import pathlib
import re
import sys

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


def _header_ffi_version(include: pathlib.Path) -> tuple[int, int]:
    text = (include / "xla/ffi/api/c_api.h").read_text()
    major = int(re.search(r"#define XLA_FFI_API_MAJOR (\d+)", text).group(1))
    minor = int(re.search(r"#define XLA_FFI_API_MINOR (\d+)", text).group(1))
    return major, minor


def runtime_ffi_version() -> tuple[int, int]:
    """The FFI API version of the installed jaxlib, from its own header."""
    return _header_ffi_version(pathlib.Path(jax.ffi.include_dir()))


def built_ffi_version() -> tuple[int, int] | None:
    """The FFI API version of the jaxlib headers the build compiled its
    upstream-header handlers and native ports against, or None."""
    try:
        cache = (BUILD / "CMakeCache.txt").read_text()
        include = re.search(r"^CCSHIM_JAXLIB_INCLUDE:PATH=(.+)$", cache, re.M).group(1)
        return _header_ffi_version(pathlib.Path(include))
    except (OSError, AttributeError):
        return None


def skip_unless_built_for_this_jaxlib() -> None:
    """Handlers compiled with XLA's C++ headers report the FFI version of
    those headers; a jaxlib older than that refuses them (JAX <= 0.8 wants
    exactly 0.1, later ones 0.1 up to their own).  A newer jaxlib takes them:
    FFI 0.3 handlers run on jaxlib 0.12's FFI 0.5 (tested there).  Skips,
    with both versions, only where the running jaxlib is older."""
    built, running = built_ffi_version(), runtime_ffi_version()
    if built is not None and running is not None and running < built:
        pytest.skip(f"built against jaxlib headers of FFI {built[0]}.{built[1]}; the "
                    f"running jaxlib {jaxlib.__version__} speaks FFI {running[0]}.{running[1]}")


def pytest_report_header(config):
    major, minor = runtime_ffi_version()
    return (f"jax {jax.__version__}, jaxlib {jaxlib.__version__} (FFI API "
            f"{major}.{minor}); libccshim {ccshim.version()} from {BUILD}")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "once(suite='pinned'): proves nothing more in a second suite: it reads and "
        "writes source only (ccshim port's patches and what it says), or what it runs runs on "
        "the newest JAX's own Python (.venv-newest's, whichever suite started it); make test "
        "runs it in that suite only (the pinned one, unless named: where it evens the two out)")


@pytest.fixture(scope="session", autouse=True)
def _compilers_through_ccache(tmp_path_factory) -> None:
    """make test's suites (dev/test_python.sh sets CCSHIM_TEST_CCACHE to
    ccache's path): the C and C++ compilers that the tests' builds start
    (the ported projects' own builds through pip, setuptools and CMake
    alike; mpicc's gcc) go through ccache, as on a machine where ccache is
    set up by its compilers' names, so that a second make test compiles
    only what changed.  Paths under this run's temporary folder are made
    relative (CCACHE_BASEDIR): where each build's working folder is in its
    tree (project_ports.build), its entries are found again by the next
    run, whose folder has another number."""
    ccache = os.environ.get("CCSHIM_TEST_CCACHE")
    if not ccache or not os.path.exists(ccache):
        return
    base = tmp_path_factory.getbasetemp()
    names = base / "ccache-bin"
    names.mkdir(exist_ok=True)
    for name in ("cc", "gcc", "c++", "g++"):
        if not (names / name).exists():
            (names / name).symlink_to(ccache)
    os.environ["PATH"] = os.pathsep.join([str(names), os.environ.get("PATH", "")])
    os.environ.update(CCACHE_BASEDIR=str(base), CCACHE_NOHASHDIR="1")
    # CMake finds the compilers by those names too; make's launchers would
    # start ccache on ccache
    for lang in ("C", "CXX", "CUDA"):
        os.environ.pop(f"CMAKE_{lang}_COMPILER_LAUNCHER", None)


def _once_elsewhere(item, suite: str) -> bool:
    mark = item.get_closest_marker("once")
    return mark is not None and mark.kwargs.get("suite", (mark.args or ("pinned",))[0]) != suite


def pytest_collection_modifyitems(config, items):
    """make test runs two suites side by side (dev/test_python.sh,
    CCSHIM_SUITE pinned and newest); a test marked once is deselected in
    the one it does not name, and counted as such in its summary."""
    suite = os.environ.get("CCSHIM_SUITE")
    if suite not in ("pinned", "newest"):
        return
    kept, left = [], []
    for item in items:
        (left if _once_elsewhere(item, suite) else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


@pytest.fixture(scope="module")
def x64():
    """JAX's 64-bit types on for a module (pytestmark = usefixtures("x64")),
    and off again after it."""
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)


@pytest.fixture(scope="session")
def kernels():
    """The legacy kernels of tests/python/kernels.c, built without ccshim."""
    return ccshim.load_legacy_library(BUILD / "tests" / "libccshim_pytest_kernels.so")


@pytest.fixture(scope="session")
def build_dir():
    return BUILD


sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from project_modules import CACHE, MPI4JAX_BUILD, cached  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"


def left_to_test_projects() -> bool:
    """Whether this is make test's suite on the pinned JAX, where the
    projects' own runs are left to make test-projects (make test runs them
    on the newest JAX; their time on both would take it past its budget)."""
    return (os.environ.get("CCSHIM_SUITE") == "pinned"
            and not os.environ.get("CCSHIM_TEST_PROJECTS"))


def fixture_missing(what: str):
    """A fetched or built fixture is absent.  Under make test (which set
    CCSHIM_FIXTURES_REQUIRED, after dev/setup.sh made the cache whole) that
    is a failure: a missing cache entry is rebuilt, never skipped.  Run by
    hand without the set-up, the test skips with the reason."""
    why = f"{what} (dev/setup.sh test makes it in {CACHE})"
    if os.environ.get("CCSHIM_FIXTURES_REQUIRED"):
        pytest.fail(why)
    pytest.skip(why)


OLD_JAXLIB = "0.4.30"
OLD_FFT_JAXLIB = "0.4.23"
OLD_FINUFFT = "0.1.0"


def _real_extension(project: str, version: str, relpath: str, module: str):
    """A real project's extension module from the wheel dev/setup.sh
    fetched from PyPI (into the per-user cache, never committed), loaded under its own
    name beside whatever else is imported; skips with the reason where the
    wheel could not be had or cannot run here."""
    import importlib.machinery
    import importlib.util
    import platform
    import sys
    if platform.machine() != "x86_64":
        pytest.skip(f"the {project} {version} wheel used here is for x86-64")
    path = cached(f"{project}-{version}") / relpath
    if not path.exists():
        fixture_missing(f"{project} {version} was not fetched ({path} is missing)")
    # Built for CPython 3.11; whether it loads in another Python is the
    # module's own answer, asked in a process of its own, since a module
    # built for another ABI may crash its loader (jaxlib 0.4.30's _lapack
    # loads on 3.12; jax-finufft 0.1.0's pybind11 module segfaults there).
    if sys.version_info[:2] != (3, 11):
        import subprocess
        probe = ("import importlib.machinery as m, importlib.util as u, sys\n"
                 "l = m.ExtensionFileLoader(sys.argv[1], sys.argv[2])\n"
                 "l.exec_module(u.module_from_spec(u.spec_from_file_location(sys.argv[1], "
                 "sys.argv[2], loader=l)))\n")
        p = subprocess.run([sys.executable, "-c", probe, module, str(path)],
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            why = (f"signal {-p.returncode}" if p.returncode < 0 else
                   (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:120])
            pytest.skip(f"{project} {version}'s module, built for CPython 3.11, does not load "
                        f"in Python {sys.version.split()[0]} ({why})")
    loader = importlib.machinery.ExtensionFileLoader(module, str(path))
    spec = importlib.util.spec_from_file_location(module, path, loader=loader)
    ext = importlib.util.module_from_spec(spec)
    loader.exec_module(ext)
    return ext


@pytest.fixture(scope="session")
def old_lapack():
    """jaxlib 0.4.30's CPU LAPACK/BLAS extension, initialised with SciPy's
    LAPACK as that jaxlib did."""
    pytest.importorskip("scipy", reason="SciPy is not installed (PyPI unreachable?); "
                        f"jaxlib {OLD_JAXLIB}'s kernels take their LAPACK from it")
    module = _real_extension("jaxlib", OLD_JAXLIB, "jaxlib/cpu/_lapack.so", "_lapack")
    module.initialize()
    return module


@pytest.fixture(scope="session")
def old_ducc_fft():
    """jaxlib 0.4.23's CPU FFT extension (ducc_fft, dynamic_ducc_fft: legacy
    v2 kernels; later jaxlibs no longer have them)."""
    return _real_extension("jaxlib", OLD_FFT_JAXLIB, "jaxlib/cpu/_ducc_fft.so", "_ducc_fft")


@pytest.fixture(scope="session")
def old_finufft():
    """jax-finufft 0.1.0's CPU extension (pybind11; FINUFFT and FFTW inside)."""
    return _real_extension("jax-finufft", OLD_FINUFFT,
                           "jax_finufft/jax_finufft_cpu.cpython-311-x86_64-linux-gnu.so",
                           "jax_finufft_cpu")


@pytest.fixture(scope="session")
def mpi4jax():
    """mpi4py's MPI and mpi4jax 0.8.1.post2's CPU module (its Cython
    extension as dev/setup.sh builds it), imported without the package's
    __init__, which imports JAX internals of its day; skips with the reason
    where it could not be built or cannot load here."""
    if not (MPI4JAX_BUILD / ".complete").exists():
        fixture_missing(f"mpi4jax 0.8.1.post2's extension was not built ({MPI4JAX_BUILD})")
    if sys.version_info[:2] != (3, 11):
        pytest.skip("mpi4jax's extension is built for the pinned venv's CPython 3.11")
    mpi = pytest.importorskip("mpi4py.MPI", reason="mpi4py is not installed")
    from project_modules import load_package_module
    return mpi, load_package_module(MPI4JAX_BUILD, "mpi4jax._src.xla_bridge.mpi_xla_bridge_cpu")
