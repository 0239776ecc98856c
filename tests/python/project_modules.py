"""Where the real projects are, and one module of a project's package
imported from there.

The projects are fetched (tests/fixtures/downloads.tsv) and built by
dev/setup.sh into the per-user cache, whose place tests/fixtures/fetch.py
decides.  A module is imported without running its package's __init__
(which imports JAX internals of its day, or the whole model): its parent
packages are stubbed with their folders as __path__.  Standard library
only: used by pytest's conftest, by programs run in processes of their own
(under mpiexec, or another venv's Python) and by tests/scan's ctest script."""

import importlib
import importlib.util
import os
import pathlib
import sys
import types

_FETCH = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "fetch.py"
_spec = importlib.util.spec_from_file_location("ccshim_tests_fetch", _FETCH)
fetch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fetch)

# The cache, and the builds dev/setup.sh makes in it (one per Python ABI).
CACHE = fetch.cache_dir()
MPI4JAX_BUILD = CACHE / "mpi4jax-0.8.1.post2-build-cp311"


def veros_build(abi: str) -> pathlib.Path:
    """veros 1.7.0 built for a CPython ABI tag ("cp311", "cp312")."""
    return CACHE / f"veros-1.7.0-build-{abi}"


def cached(folder: str) -> pathlib.Path:
    """A fetched entry's folder under the cache (downloads.tsv's column)."""
    return CACHE / folder


def load_package_module(root, dotted: str):
    """Imports ``dotted`` (e.g. "veros.core.special.tdma_") from the package
    tree at ``root``; parents already imported are kept."""
    parts = dotted.split(".")
    for i in range(1, len(parts)):
        name = ".".join(parts[:i])
        if name not in sys.modules:
            stub = types.ModuleType(name)
            stub.__path__ = [os.path.join(os.fspath(root), *parts[:i])]
            sys.modules[name] = stub
    return importlib.import_module(dotted)
