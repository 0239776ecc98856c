"""What ``ccshim legacy`` hands every Python its command starts through
PYTHONPATH alone, so that a child started with an environment of its own
that keeps only PYTHONPATH (mpi4jax's tests start theirs so) runs the same
ccshim, the same way: the library this ccshim loaded (from pip's package,
a build folder or CCSHIM_LIBRARY), the file the report goes to, and the
libraries the command's LD_PRELOAD named (``preload``: the MPI a parent
chose by preloading it, which such a child would otherwise lose; the boot
folder's sitecustomize loads them into the global scope at start-up, see
``load_preload``).

Each value is one PYTHONPATH entry beside the boot folder's::

    <package>/legacy/_boot/carried/<key>=<value, percent-encoded>

a path that names no folder, which Python's import machinery passes over;
the value is encoded whole (``/`` and ``:`` included), so the entry is one
path component and never splits PYTHONPATH.  ``read`` takes them back from
``sys.path``.  (Strict mode travels the same way, as the boot folder's
``strict`` folder.)  Standard library only: ccshim._native reads the
library from here before anything of ccshim is loaded.
"""

from __future__ import annotations

import os
import sys
from urllib.parse import quote, unquote

BOOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "legacy", "_boot")
FOLDER = "carried"
KEYS = ("library", "report", "preload")


def entries(values: dict[str, str]) -> list[str]:
    """The PYTHONPATH entries carrying ``values`` (keys of KEYS; a value of
    None is left out)."""
    out = []
    for key, value in values.items():
        if key not in KEYS:
            raise ValueError(f"ccshim: {key!r} is not carried; expected one of {KEYS}")
        if value is None:
            continue
        name = f"{key}={quote(value, safe='')}"
        if len(name) > 255:  # one path component: longer, and importing from it fails
            print(f"ccshim legacy: {key} {value!r} is too long to carry to children "
                  f"({len(name)} characters encoded, at most 255); not carried", file=sys.stderr)
            continue
        out.append(os.path.join(BOOT, FOLDER, name))
    return out


def is_entry(entry: str) -> bool:
    """Whether a PYTHONPATH entry is one of ``entries``' (of any ccshim's
    boot folder)."""
    parent = os.path.dirname(entry)
    return (os.path.basename(parent) == FOLDER and
            os.path.basename(os.path.dirname(parent)) == "_boot" and
            os.path.basename(entry).partition("=")[0] in KEYS)


def read(path: list[str] | None = None) -> dict[str, str]:
    """The values carried on ``path`` (default: sys.path); the first entry
    of each key counts."""
    found: dict[str, str] = {}
    for entry in sys.path if path is None else path:
        if isinstance(entry, str) and is_entry(entry):
            key, _, value = os.path.basename(entry).partition("=")
            found.setdefault(key, unquote(value))
    return found


SANITIZERS = ("libasan", "libtsan", "liblsan", "libubsan", "libhwasan", "libclang_rt.")


def preload_list(value: str) -> list[str]:
    """LD_PRELOAD's entries, separated by spaces or colons as ld.so reads
    them."""
    return [p for p in value.replace(":", " ").split() if p]


def load_preload(path: list[str] | None = None, environ=None) -> list[str]:
    """In a Python whose LD_PRELOAD was not passed on (its environment is
    its own) but whose path carries ``preload``: loads each library with
    RTLD_GLOBAL, before anything else of the program, so that it comes
    first in the process's global scope as a preload would, and extensions
    loaded later bind their symbols to it (an MPI preloaded by the parent
    before another MPI some library of the child maps).  Symbols already
    bound (Python's own, libc's) are not interposed: that only a real
    preload does.  Returns what it loaded; a library that cannot be loaded
    is said on stderr and passed over, as ld.so does with LD_PRELOAD."""
    environ = os.environ if environ is None else environ
    carried = read(path).get("preload")
    if not carried or environ.get("LD_PRELOAD"):
        return []
    import ctypes
    loaded = []
    for lib in preload_list(carried):
        if os.path.basename(lib).startswith(SANITIZERS):
            continue  # a sanitizer's runtime works only as a real preload: loaded late, it aborts
        try:
            ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
            loaded.append(lib)
        except OSError as e:
            print(f"ccshim legacy: cannot load {lib!r} of the LD_PRELOAD carried from the "
                  f"command ({e}); passed over", file=sys.stderr)
    return loaded
