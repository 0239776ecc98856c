"""Zero-change mode for a whole program, before its first import.

``ccshim legacy [--strict] -- CMD`` (and ``python -m ccshim.legacy``) put
this folder first on PYTHONPATH (and, for --strict, its ``strict`` folder, a
marker, next), so that every Python the command starts runs this file at
start-up.  It runs the sitecustomize it shadows (Debian's, a venv's), then
waits: the moment ``jax`` has been imported, it enables zero-change mode
(strict with the marker) before the program's next line, so before any
extension registers or lowers.  The mode is in the path, not only in
CCSHIM_LEGACY: a test that starts Python with an environment of its own but
keeps PYTHONPATH (mpi4jax's do) keeps the mode.  A Python that never imports
JAX (pip, a build step) never imports ccshim either.  First of all, where
the command had LD_PRELOAD and this Python lost it, the libraries it named
are loaded into the global scope (ccshim/_carried.py's load_preload, read
from its file: nothing of the ccshim package is imported here).
"""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_strict = os.path.join(_here, "strict")


def _chain():
    """Runs the next sitecustomize on the path, which this one shadows
    (this one stays sitecustomize in sys.modules, as the import expects)."""
    path = [p for p in sys.path if os.path.abspath(p or ".") not in (_here, _strict)]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None:
        return
    me = sys.modules["sitecustomize"]
    try:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)
    finally:
        sys.modules["sitecustomize"] = me


class _Then(importlib.abc.Loader):
    """A loader that runs ``after`` once the module it wraps is executed,
    and gives the module its own loader back then."""

    def __init__(self, loader, after):
        self._loader, self._after = loader, after

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        module.__loader__ = module.__spec__.loader = self._loader
        self._after(module.__name__)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _AfterJax(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of ``jax`` (and of ``jaxlib``,
    imported alone) so that ccshim.legacy is enabled right after it."""

    def find_spec(self, name, path, target=None):
        if name not in ("jax", "jaxlib"):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None:
            spec.loader = _Then(spec.loader, _after)
        return spec


def _after(name):
    if name == "jaxlib":
        # jaxlib alone (jax imports it first, half-made: not then)
        if "jax" not in sys.modules:
            import jax  # noqa: F401  (enables through this hook)
        return
    for finder in list(sys.meta_path):
        if isinstance(finder, _AfterJax):
            sys.meta_path.remove(finder)
    try:
        import ccshim.legacy
    except ImportError as e:
        raise ImportError(
            f"ccshim legacy: zero-change mode was asked for (ccshim's boot folder is on "
            f"PYTHONPATH), but this Python ({sys.executable}) cannot import ccshim: {e}") from e
    ccshim.legacy.enable(strict=_strict in (os.path.abspath(p or ".") for p in sys.path))


def _load_carried_preload():
    # Most Pythons have nothing to load (no preload carried, or LD_PRELOAD
    # kept): they do not read _carried.py at start-up.
    if os.environ.get("LD_PRELOAD") or not any(
            os.path.basename(p).startswith("preload=") and
            os.path.basename(os.path.dirname(p)) == "carried" for p in sys.path):
        return
    spec = importlib.util.spec_from_file_location(
        "_ccshim_boot_carried", os.path.join(os.path.dirname(os.path.dirname(_here)),
                                             "_carried.py"))
    carried = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(carried)
    carried.load_preload()


_load_carried_preload()
_chain()
sys.meta_path.insert(0, _AfterJax())
