"""One module of a real project's package, built in place under .cache/ by
tools/setup.sh, imported without running the package's __init__ (which
imports JAX internals of its day, or the whole model): its parent packages
are stubbed with their folders as __path__.  Standard library only: used by
pytest's conftest, by programs run in processes of their own (under
mpiexec, or another venv's Python) and by tests/scan's ctest script."""

import importlib
import os
import sys
import types


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
