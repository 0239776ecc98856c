"""What ``ccshim legacy`` hands every Python its command starts through
PYTHONPATH alone, so that a child started with an environment of its own
that keeps only PYTHONPATH (mpi4jax's tests start theirs so) runs the same
ccshim, the same way: the library this ccshim loaded (from pip's package,
a build folder or CCSHIM_LIBRARY) and the file the report goes to.

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
KEYS = ("library", "report")


def entries(values: dict[str, str]) -> list[str]:
    """The PYTHONPATH entries carrying ``values`` (keys of KEYS; a value of
    None is left out)."""
    out = []
    for key, value in values.items():
        if key not in KEYS:
            raise ValueError(f"ccshim: {key!r} is not carried; expected one of {KEYS}")
        if value is not None:
            out.append(os.path.join(BOOT, FOLDER, f"{key}={quote(value, safe='')}"))
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
