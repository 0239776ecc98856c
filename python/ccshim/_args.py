"""Validation at the Python boundary: every argument that goes to C is
checked here, so that a wrong type or value gets a message in the user's
terms (``signature must be str, got int``) instead of an AttributeError from
deep inside, and nothing is silently cut: C strings end at a NUL, and ctypes
truncates integers to the field's width without a word."""

from __future__ import annotations

import ctypes
import operator
from typing import Any

INT_MAX = 2**31 - 1
UINT32_MAX = 2**32 - 1
POINTER_LIMIT = 2 ** (8 * ctypes.sizeof(ctypes.c_void_p))


def text(name: str, value: Any, *, optional: bool = False) -> bytes | None:
    """A str for C, as UTF-8 bytes; refused if it holds a NUL."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be str{' or None' if optional else ''}, "
                        f"got {type(value).__name__}")
    at = value.find("\0")
    if at >= 0:
        raise ValueError(f"{name} holds a NUL character at index {at}; C would read "
                         f"only the {at} characters before it, so it is refused")
    return value.encode()


def integer(name: str, value: Any, lo: int, hi: int) -> int:
    """An int within [lo, hi] (bool is not an int here)."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be int, got bool")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be int, got {type(value).__name__}") from None
    if not lo <= number <= hi:
        raise ValueError(f"{name} {number} is out of range; expected {lo}..{hi}")
    return number


def choice(name: str, value: Any, choices) -> str:
    """One of a few strings."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be str, got {type(value).__name__}")
    if value not in choices:
        raise ValueError(f"{name} {value!r}; expected "
                         + " or ".join(repr(c) for c in choices))
    return value


def version_pair(name: str, value: Any) -> tuple[int, int]:
    """(major, minor), each within a C int."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{name} must be a (major, minor) pair of ints, got {value!r}")
    return (integer(f"{name}[0]", value[0], 0, INT_MAX),
            integer(f"{name}[1]", value[1], 0, INT_MAX))
