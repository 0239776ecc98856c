"""What every part of ccshim.export shares: the error type, the names of
ccshim's typed targets, what a custom call is, and JAX's modules."""

from __future__ import annotations

import dataclasses


# The bytecode magic of MLIR ("ML\xefR"); a serialized jax.export artifact
# holds its module as such bytes inside a flatbuffer.
BYTECODE_MAGIC = b"ML\xefR"


DEFAULT_PREFIX = "ccshim."


OPAQUE_ATTR = "opaque"


# Custom-call targets that XLA or JAX implement themselves: not user kernels,
# never rewritten.  (jax.export's list of stable targets holds these and the
# typed jaxlib kernels; the prefixes are XLA's own namespaces.)
BUILTIN_TARGETS = frozenset({
    "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "annotate_device_placement",
    "shape_assertion", "AllocateBuffer", "LayoutConstraint", "MoveToHost", "MoveToDevice",
    "PartitionId", "ReplicaId", "InspectSharding", "X64Combine", "X64SplitLow",
    "X64SplitHigh", "tpu_custom_call", "mosaic_gpu", "mosaic_gpu_v2", "Eigh", "Qr",
    "ProductOfElementaryHouseholderReflectors", "LuDecomposition", "ApproxTopK", "TopK",
    "tf.call_tf_function",
})


BUILTIN_PREFIXES = ("stablehlo.", "mhlo.", "xla.", "sdy.", "__gpu$", "__cpu$")


class ArtifactError(ValueError):
    """An input ccshim cannot read or rewrite, or an artifact whose targets
    are not registered; the message says what was expected and what came."""


def typed_name(target: str, api_version: int, prefix: str = DEFAULT_PREFIX) -> str:
    """The typed-FFI target a legacy call to ``target`` in form
    ``api_version`` becomes: ``ccshim.v2.lapack_sgetrf``.  Deterministic, so
    that the same legacy call always gets the same name."""
    return f"{prefix}v{api_version}.{target}"


def _legacy_of(name: str, prefix: str) -> tuple[str, int] | None:
    """(legacy target, form) of a typed_name, or None."""
    if not name.startswith(prefix + "v"):
        return None
    form, dot, target = name[len(prefix) + 1:].partition(".")
    if not dot or form not in ("1", "2", "3") or not target:
        return None
    return target, int(form)


@dataclasses.dataclass
class Call:
    """One custom call found in an artifact."""
    target: str
    kind: str                 # "legacy", "typed", "builtin", "ccshim" (already rewritten)
    api_version: int
    signature: str            # HLO shape syntax, layouts where not row-major
    opaque_bytes: int         # length of the legacy backend_config
    has_side_effect: bool
    aliases: int              # output/operand alias pairs
    location: str
    legacy_target: str | None = None  # kind "ccshim": the target it stands for

    def as_json(self) -> dict:
        return dataclasses.asdict(self)


def _jax():
    try:
        import jax  # noqa: F401
        from jax import export as jax_export
        from jax._src.interpreters import mlir
        from jax._src.lib import _jax as jax_ext
        from jax._src.lib.mlir import ir
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
