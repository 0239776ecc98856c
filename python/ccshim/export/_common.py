"""What every part of ccshim.export shares: the error type, the names of
ccshim's typed targets and what a custom call is (from ccshim._hlo, which
ccshim.legacy shares too), and JAX's modules."""

from __future__ import annotations

from .. import _jax_internals
from .._hlo import (BUILTIN_PREFIXES, BUILTIN_TARGETS, DEFAULT_PREFIX, OPAQUE_ATTR,  # noqa: F401
                    ArtifactError, Call, legacy_of, typed_name)


# The bytecode magic of MLIR ("ML\xefR"); a serialized jax.export artifact
# holds its module as such bytes inside a flatbuffer.
BYTECODE_MAGIC = b"ML\xefR"


def _jax():
    try:
        import jax  # noqa: F401
        from jax import export as jax_export
        mlir = _jax_internals.mlir()
        jax_ext = _jax_internals.jax_ext()
        ir = _jax_internals.ir()
    except ImportError as e:  # pragma: no cover - a ccshim without JAX
        raise ArtifactError(f"reading artifacts needs JAX and jaxlib: {e}") from None
    return jax_export, mlir, jax_ext, ir


def _jax_version() -> str:
    import jax
    return jax.__version__


def _jaxlib_version() -> str:
    import jaxlib
    return jaxlib.__version__


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:300]


def _describe_bytes(data: bytes) -> str:
    head = data[:16]
    return f"{len(data)} bytes beginning {head!r}"


def _looks_like_text(data: bytes) -> bool:
    head = data[:4096].lstrip()
    return head.startswith((b"module", b"#", b"func.func", b"//", b"\"builtin.module\""))


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, for a message."""
    import stat
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def union_platforms(order, *groups) -> list[str]:
    """The platforms of ``groups`` (a Call's ``platforms``; None: all of
    ``order``), in ``order``'s order (an artifact's)."""
    chosen = set()
    for group in groups:
        chosen.update(order if group is None else group)
    return [p for p in order if p in chosen]
