"""Serialized JAX programs whose custom calls use the legacy convention,
brought back through ccshim.

A ``jax.export`` artifact (or a plain StableHLO module) keeps its custom
calls as they were lowered: a legacy call names its target, its form
(``api_version`` 1-3) and its opaque (``backend_config``).  Such a program
stops compiling when the target is no longer registered, and every one of
them stops the day XLA drops the legacy path.  ``rewrite`` turns each legacy
call into a typed-FFI call (``api_version`` 4) on a target that ccshim wraps::

    stablehlo.custom_call @lapack_sgetrf(...) {api_version = 2, backend_config = "..."}
      becomes
    stablehlo.custom_call @ccshim.v2.lapack_sgetrf(...)
        {api_version = 4, backend_config = {opaque = dense<...> : tensor<Nxui8>}}

with the opaque bytes carried intact (a uint8 array attribute, the one
``ccshim.jax.legacy_call`` passes), and operands, results, layouts, aliases,
side-effect flags, locations and everything else untouched.  The new
target's name is a function of the old one and its form only
(``typed_name``), so executables cached and reloaded find it again; the
platform is XLA's other registration key.  ``register`` registers, for an
artifact, each kernel it needs under that name; ``load`` refuses an artifact
whose targets are not registered, naming them.

Reading and writing go through JAX's own machinery: ``jax.export``'s
(de)serialization, and jaxlib's MLIR and StableHLO bindings (portable
artifacts are written at the StableHLO version ``jax.export`` itself
targets).  The written artifact uses the running JAX's serialization.

Calls left alone: typed-FFI calls (``api_version`` 4, or JAX's own form for
them, ``api_version`` 1 with an ``mhlo.backend_config`` dictionary: so the
version alone does not tell), calls to XLA's and JAX's built-in targets
(``Sharding``, ``shape_assertion``, ...), calls already rewritten, and the
targets named in ``keep``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["ArtifactError", "Artifact", "Call", "read", "rewrite", "typed_name", "needed",
           "register", "load", "check", "main"]

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


# --- Reading -------------------------------------------------------------------


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


class _NativeErrors:
    """Holds what native code (MLIR's diagnostics) writes to stderr while
    reading, so that an error is one line of ours, which quotes the first
    line of theirs, instead of their multi-line dump before it."""

    def __enter__(self):
        import tempfile
        sys.stderr.flush()
        self.saved = os.dup(2)
        self.file = tempfile.TemporaryFile()
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.file.seek(0)
        self.text = self.file.read().decode(errors="replace")
        self.file.close()
        return False

    def first(self) -> str:
        for line in getattr(self, "text", "").splitlines():
            line = line.strip()
            if line:
                return line.split("error: ", 1)[-1][:300]
        return ""


def _deserialize_portable(jax_ext, ir, data: bytes):
    """A StableHLO portable artifact as an ir.Module (older jaxlibs return
    its text, newer ones the module)."""
    module = jax_ext.mlir.deserialize_portable_artifact(data)
    if isinstance(module, (str, bytes)):
        module = ir.Module.parse(module)
    return module


def _describe_bytes(data: bytes) -> str:
    head = data[:16]
    return f"{len(data)} bytes beginning {head!r}"


class Artifact:
    """A program read from bytes: ``kind`` is "export" (a serialized
    jax.export artifact), "portable" (a StableHLO portable artifact, as
    jax.export embeds and JAX's back-compatibility data records), "bytecode"
    (plain MLIR bytecode) or "text" (MLIR text).  ``exported`` is the
    jax.export.Exported for "export", else None; ``module`` the ir.Module,
    valid while this object lives."""

    def __init__(self, data: bytes | bytearray | memoryview, *, platform: str | None = None,
                 what: str = "input"):
        jax_export, mlir, jax_ext, ir = _jax()
        data = bytes(data)
        self.what = what
        self.context = mlir.make_ir_context()
        self.exported = None
        self.platforms: tuple[str, ...] = ()
        if not data:
            raise ArtifactError(f"{what}: empty; expected a jax.export artifact or a "
                                "StableHLO module (bytecode or text)")
        native = _NativeErrors()
        try:
            with self.context, native:
                self._read(data, jax_export, jax_ext, ir)
        except ArtifactError as e:
            said = native.first()
            raise ArtifactError(f"{e} [{said}]" if said else str(e)) from None
        if platform is not None:
            from . import parse_platform
            canonical = _JAX_NAMES[parse_platform(platform)[0]]
            if self.platforms and self.platforms != (canonical,):
                raise ArtifactError(f"{what}: was exported for {', '.join(self.platforms)}; "
                                    f"--platform {platform} contradicts it")
            self.platforms = (canonical,)

    def _read(self, data, jax_export, jax_ext, ir):
        what = self.what
        if data.startswith(BYTECODE_MAGIC):
            self.kind, self.module = self._bytecode(data, jax_ext, ir)
        elif _looks_like_text(data):
            self.kind = "text"
            try:
                self.module = ir.Module.parse(data.decode())
            except Exception as e:  # MLIRError, UnicodeDecodeError
                raise ArtifactError(f"{what}: not a valid MLIR text module: "
                                    f"{_first_line(e)}") from None
        else:
            self.kind = "export"
            self.exported = self._exported(data, jax_export)
            self.platforms = tuple(self.exported.platforms)
            try:
                self.module = _deserialize_portable(jax_ext, ir,
                                                    self.exported.mlir_module_serialized)
            except Exception as e:
                raise ArtifactError(
                    f"{what}: the jax.export artifact's module does not deserialize "
                    f"({_first_line(e)}): truncated, or written by a newer StableHLO "
                    "than this jaxlib reads") from None

    def _bytecode(self, data, jax_ext, ir):
        try:
            return "portable", _deserialize_portable(jax_ext, ir, data)
        except Exception as portable_error:
            try:
                return "bytecode", ir.Module.parse(data)
            except Exception:
                raise ArtifactError(
                    f"{self.what}: MLIR bytecode that does not read "
                    f"({_first_line(portable_error)}): truncated, or written by a newer "
                    "StableHLO than this jaxlib reads") from None

    def _exported(self, data, jax_export):
        from jax._src.export import _export, serialization
        try:
            newest = getattr(serialization, "_SERIALIZATION_VERSION", None)
            root = serialization.ser_flatbuf.Exported.GetRootAsExported(bytearray(data), 0)
            version = root.SerializationVersion()
            if newest is not None and version > newest:
                raise ArtifactError(
                    f"{self.what}: a jax.export artifact of serialization version {version}, "
                    f"from a newer JAX; this JAX {_jax_version()} reads up to {newest}")
            exported = jax_export.deserialize(bytearray(data))
        except ArtifactError:
            raise
        except NotImplementedError as e:  # a version this JAX no longer reads
            raise ArtifactError(
                f"{self.what}: a jax.export artifact this JAX {_jax_version()} does not read "
                f"({_first_line(e)}); JAX 0.10 reads the serialization versions of 2023 on "
                "(ccshim rewrite there writes today's)") from None
        except Exception as e:
            raise ArtifactError(
                f"{self.what}: not a jax.export artifact, nor a StableHLO module "
                f"({_describe_bytes(data)}; reading it as an exported artifact failed: "
                f"{_first_line(e)}); truncated, or not an artifact") from None
        if not exported.mlir_module_serialized.startswith(BYTECODE_MAGIC):
            raise ArtifactError(f"{self.what}: not a jax.export artifact ({_describe_bytes(data)}:"
                                " no StableHLO module inside)")
        hi = _export.maximum_supported_calling_convention_version
        if exported.calling_convention_version > hi:
            raise ArtifactError(
                f"{self.what}: uses calling convention {exported.calling_convention_version}, "
                f"from a newer JAX; this JAX {_jax_version()} supports up to {hi}")
        return exported

    # -- what is inside --

    def custom_calls(self, prefix: str = DEFAULT_PREFIX) -> list[tuple[Any, Call]]:
        """(operation, Call) for every custom call, in module order."""
        found = []
        with self.context:
            for op in _walk(self.module.operation):
                if op.name == "stablehlo.custom_call":
                    found.append((op, _describe_call(op, prefix)))
        return found

    def calls(self, prefix: str = DEFAULT_PREFIX) -> list[Call]:
        return [call for _, call in self.custom_calls(prefix)]

    # -- writing --

    def to_bytes(self, kind: str | None = None) -> bytes:
        """The module as ``kind`` (default: the kind it was read as)."""
        jax_export, mlir, jax_ext, ir = _jax()
        kind = kind or self.kind
        with self.context:
            if kind == "text":
                return self.module.operation.get_asm(enable_debug_info=True).encode()
            if kind == "bytecode":
                return mlir.module_to_bytecode(self.module)
            portable = _portable(self.module)
            if kind == "portable":
                return portable
            if kind != "export":
                raise ArtifactError(f"unknown output kind {kind!r}; expected export, "
                                    "portable, bytecode or text")
            exported = self.exported if self.exported is not None else self._exported_from_main()
            return bytes(_with_module(exported, portable).serialize())

    def _exported_from_main(self):
        """A jax.export.Exported for a plain module, from its public main: what
        JAX's own back-compatibility tests build around recorded modules."""
        import jax
        from jax._src import core
        from jax._src.export import _export
        if len(self.platforms) != 1:
            raise ArtifactError(f"{self.what}: a plain module does not say its platform; "
                                "pass platform= (--platform) to write it as an exported artifact")
        main = _main_function(self.module, self.what)
        from jax._src.lib.mlir import ir
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        arg_attrs = main.attributes["arg_attrs"] if "arg_attrs" in main.attributes else None
        for i, t in enumerate(ftype.inputs):
            attrs = str(arg_attrs[i]) if arg_attrs is not None else ""
            if "jax.global_constant" in attrs or "jax.token" in attrs or "token" in str(t):
                raise ArtifactError(
                    f"{self.what}: main's argument {i} ({t} {attrs}) is a dimension, platform "
                    "index or token argument; only modules whose main takes and returns "
                    "arrays can be wrapped as an exported artifact")
        in_avals = tuple(_aval(t, f"{self.what}: main's argument {i}", core)
                         for i, t in enumerate(ftype.inputs))
        out_avals = tuple(_aval(t, f"{self.what}: main's result {i}", core)
                          for i, t in enumerate(ftype.results))
        in_tree = jax.tree_util.tree_structure((tuple(in_avals), {}))
        out_tree = jax.tree_util.tree_structure(tuple(out_avals))
        nr_devices = 1
        attrs = self.module.operation.attributes
        for key in ("mhlo.num_partitions", "mhlo.num_replicas"):
            if key in attrs:
                nr_devices *= int(ir.IntegerAttr(attrs[key]).value)

        def no_vjp(_):
            raise ArtifactError(f"{self.what}: no VJP was recorded with this module")

        fields = dict(
            fun_name="main", in_tree=in_tree, in_avals=in_avals, out_tree=out_tree,
            out_avals=out_avals, _has_named_shardings=True,
            _in_named_shardings=(None,) * len(in_avals),
            _out_named_shardings=(None,) * len(out_avals),
            in_shardings_hlo=(None,) * len(in_avals), out_shardings_hlo=(None,) * len(out_avals),
            nr_devices=nr_devices, platforms=self.platforms, ordered_effects=(),
            unordered_effects=(), disabled_safety_checks=(), mlir_module_serialized=b"",
            calling_convention_version=_calling_convention(),
            module_kept_var_idx=tuple(range(len(in_avals))), uses_global_constants=False,
            _get_vjp=no_vjp)
        # The fields this JAX's Exported has (named shardings came in 2026).
        known = {f.name for f in dataclasses.fields(_export.Exported)}
        return _export.Exported(**{k: v for k, v in fields.items() if k in known})

    def as_exported(self):
        """A jax.export.Exported of this program, to call."""
        from jax import export as jax_export
        return jax_export.deserialize(bytearray(self.to_bytes("export")))


_JAX_NAMES = {"host": "cpu", "cuda": "cuda", "rocm": "rocm"}


def _jax_version() -> str:
    import jax
    return jax.__version__


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:300]


def _looks_like_text(data: bytes) -> bool:
    head = data[:4096].lstrip()
    return head.startswith((b"module", b"#", b"func.func", b"//", b"\"builtin.module\""))


def _walk(op):
    yield op
    for region in op.regions:
        for block in region:
            for child in block:
                yield from _walk(child.operation)


def _main_function(module, what):
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func" and str(op.attributes["sym_name"]).strip('"') == "main":
            return op
    raise ArtifactError(f"{what}: no function named main")


def _aval(t, what, core):
    from jax._src.lib.mlir import ir
    from . import numpy_dtype
    try:
        ranked = ir.RankedTensorType(t)
    except (ValueError, TypeError):
        raise ArtifactError(f"{what} is {t}, not an array") from None
    if not ranked.has_static_shape:
        raise ArtifactError(f"{what} is {t}: shape-polymorphic modules are not wrapped as "
                            "exported artifacts here; rewrite the exported artifact instead")
    return core.ShapedArray(tuple(ranked.shape), numpy_dtype(_hlo_type(ranked.element_type)))


def _calling_convention() -> int:
    from jax._src import config
    return config.jax_export_calling_convention_version.value


def _portable(module) -> bytes:
    """The module as a StableHLO portable artifact at the version jax.export
    writes (jax.export's own routine where this JAX has it)."""
    from jax._src.export import _export
    to_bytecode = getattr(_export, "_module_to_bytecode", None)
    if to_bytecode is None:  # pragma: no cover - older JAX
        raise ArtifactError(f"JAX {_jax_version()} has no jax.export module writer that "
                            "ccshim knows (jax._src.export._export._module_to_bytecode)")
    return to_bytecode(module)


def _with_module(exported, portable: bytes):
    """The Exported with a new module, and written as the running JAX writes
    them (an artifact from before named shardings gets them, where that
    changes nothing: one device, or no sharding given)."""
    fields = {"mlir_module_serialized": portable}
    if not getattr(exported, "_has_named_shardings", True):
        given = [s for s in (*exported.in_shardings_hlo, *exported.out_shardings_hlo)
                 if s is not None and not s.is_replicated()]
        if given and exported.nr_devices != 1:
            raise ArtifactError(
                f"the artifact predates JAX's named shardings and shards over "
                f"{exported.nr_devices} devices ({given[0]}); this JAX writes only named "
                "shardings, which cannot be recovered from it")
        fields.update(_has_named_shardings=True,
                      _in_named_shardings=(None,) * len(exported.in_avals),
                      _out_named_shardings=(None,) * len(exported.out_avals),
                      in_shardings_hlo=(None,) * len(exported.in_avals),
                      out_shardings_hlo=(None,) * len(exported.out_avals))
    return dataclasses.replace(exported, **fields)


# --- Custom calls ----------------------------------------------------------------


def _attr(op, name):
    return op.attributes[name] if name in op.attributes else None


def _string(attr) -> bytes:
    from jax._src.lib.mlir import ir
    return ir.StringAttr(attr).value_bytes


def _hlo_type(t) -> str:
    s = str(t)
    if s == "i1":
        return "pred"
    if s.startswith("ui"):
        return "u" + s[2:]
    if s.startswith("i"):
        return "s" + s[1:]
    if s.startswith("complex<"):
        return {"complex<f32>": "c64", "complex<f64>": "c128"}.get(s, s)
    return s.lower()


def _shape_text(t, layout: Sequence[int] | None) -> str:
    from jax._src.lib.mlir import ir
    if "token" in str(t):
        return "token[]"
    try:
        tup = ir.TupleType(t)
    except (ValueError, TypeError):
        tup = None
    if tup is not None:
        return "(" + ", ".join(_shape_text(tup.get_type(i), None)
                               for i in range(tup.num_types)) + ")"
    ranked = ir.RankedTensorType(t)
    dims = ",".join("?" if ir.ShapedType.is_dynamic_size(d) else str(d) for d in ranked.shape)
    text = f"{_hlo_type(ranked.element_type)}[{dims}]"
    rank = ranked.rank
    if layout is not None and list(layout) != list(reversed(range(rank))):
        text += "{" + ",".join(map(str, layout)) + "}"
    return text


def _layouts(op, name) -> list[list[int]] | None:
    from jax._src.lib.mlir import ir
    attr = _attr(op, name)
    if attr is None:
        return None
    return [[int(v) for v in ir.DenseIntElementsAttr(a)] for a in ir.ArrayAttr(attr)]


def _describe_call(op, prefix: str) -> Call:
    from jax._src.lib.mlir import ir
    target = _string(op.attributes["call_target_name"]).decode(errors="replace")
    version_attr = _attr(op, "api_version")
    # StableHLO's default: API_VERSION_ORIGINAL.
    api_version = int(ir.IntegerAttr(version_attr).value) if version_attr is not None else 1
    config = _attr(op, "backend_config")
    typed = api_version == 4 or "mhlo.backend_config" in op.attributes
    opaque = 0
    if config is not None and not typed:
        try:
            opaque = len(_string(config))
        except (ValueError, TypeError):
            typed = True  # a dictionary backend_config is typed-FFI attributes
    in_layouts = _layouts(op, "operand_layouts") or [None] * len(op.operands)
    out_layouts = _layouts(op, "result_layouts") or [None] * len(op.results)
    operands = ", ".join(_shape_text(v.type, lay) for v, lay in zip(op.operands, in_layouts))
    results = [_shape_text(v.type, lay) for v, lay in zip(op.results, out_layouts)]
    result = results[0] if len(results) == 1 else "(" + ", ".join(results) + ")"
    side = _attr(op, "has_side_effect")
    aliases = _attr(op, "output_operand_aliases")
    legacy = _legacy_of(target, prefix)
    if legacy is not None and typed:
        kind = "ccshim"
    elif typed:
        kind = "typed"
    elif target in BUILTIN_TARGETS or target.startswith(BUILTIN_PREFIXES):
        kind = "builtin"
    else:
        kind = "legacy"
    return Call(target=target, kind=kind, api_version=api_version,
                signature=f"({operands}) -> {result}", opaque_bytes=opaque,
                has_side_effect=bool(ir.BoolAttr(side).value) if side is not None else False,
                aliases=len(ir.ArrayAttr(aliases)) if aliases is not None else 0,
                location=str(op.location), legacy_target=legacy[0] if legacy else None)


# --- Rewriting -------------------------------------------------------------------


def read(src: Any, *, platform: str | None = None) -> Artifact:
    """An Artifact from a path, bytes, a jax.export.Exported or an Artifact."""
    if isinstance(src, Artifact):
        return src
    if hasattr(src, "mlir_module_serialized") and hasattr(src, "serialize"):
        return Artifact(bytes(src.serialize()), platform=platform, what="the Exported")
    if isinstance(src, (bytes, bytearray, memoryview)):
        return Artifact(src, platform=platform)
    if isinstance(src, (str, os.PathLike)):
        path = pathlib.Path(src)
        try:
            data = path.read_bytes()
        except OSError as e:
            raise ArtifactError(f"{path}: cannot read it: {e.strerror}") from None
        return Artifact(data, platform=platform, what=str(path))
    raise TypeError("an artifact is a path, bytes, a jax.export.Exported or an Artifact; "
                    f"got {type(src).__name__}")


@dataclasses.dataclass
class Rewritten:
    """What rewrite made: the artifact's bytes, and per legacy target the
    typed target it became (the manifest)."""
    data: bytes
    kind: str
    platforms: tuple[str, ...]
    targets: list[dict]
    kept: list[Call]

    def manifest(self) -> dict:
        return {"ccshim_rewrite": 1, "kind": self.kind, "platforms": list(self.platforms),
                "targets": self.targets,
                "left_alone": [{"target": c.target, "kind": c.kind} for c in self.kept]}


def rewrite(src: Any, *, prefix: str = DEFAULT_PREFIX, platform: str | None = None,
            to: str | None = None, keep: Iterable[str] = (),
            only: Iterable[str] | None = None) -> Rewritten:
    """Every legacy custom call of ``src`` (a path, bytes, an Exported) made a
    typed-FFI call on ``typed_name(target, form, prefix)``.  ``keep``: legacy
    targets to leave alone; ``only``: the legacy targets to rewrite (each
    must occur).  ``to``: the output kind (default: the input's; "export"
    wraps a plain module as a jax.export artifact, which needs ``platform``).
    """
    from . import _args
    _args.text("prefix", prefix)
    art = read(src, platform=platform)
    keep = set(keep)
    only = set(only) if only is not None else None
    calls = art.custom_calls(prefix)
    present = {c.target for _, c in calls if c.kind == "legacy"}
    for name, chosen in (("keep", keep), ("only", only or set())):
        missing = sorted(chosen - present)
        if missing:
            raise ArtifactError(
                f"{art.what}: {name} names {', '.join(missing)}, which no legacy call of this "
                f"artifact targets (its legacy targets: {', '.join(sorted(present)) or 'none'})")
    targets: dict[str, dict] = {}
    kept: list[Call] = []
    with art.context:
        for op, call in calls:
            if call.kind != "legacy" or call.target in keep or (
                    only is not None and call.target not in only):
                kept.append(call)
                continue
            new = _rewrite_call(op, call, prefix, art.what)
            entry = targets.setdefault(new, {
                "legacy": call.target, "typed": new, "api_version": call.api_version,
                "platforms": list(art.platforms), "calls": 0, "signatures": []})
            entry["calls"] += 1
            if call.signature not in entry["signatures"]:
                entry["signatures"].append(call.signature)
        if not art.module.operation.verify():
            raise ArtifactError(f"{art.what}: the rewritten module does not verify")
    if art.exported is not None:
        # jax.export lists the custom calls it was told to accept; the new
        # names stand where the old ones stood.
        from jax import export as jax_export
        renamed = {t["legacy"] for t in targets.values()}
        checks = [c for c in art.exported.disabled_safety_checks
                  if c.is_custom_call() not in renamed]
        checks += [jax_export.DisabledSafetyCheck.custom_call(t) for t in sorted(targets)]
        art.exported = dataclasses.replace(art.exported, disabled_safety_checks=tuple(checks))
    kind = to or art.kind
    return Rewritten(data=art.to_bytes(kind), kind=kind, platforms=art.platforms,
                     targets=sorted(targets.values(), key=lambda t: t["typed"]), kept=kept)


def _rewrite_call(op, call: Call, prefix: str, what: str) -> str:
    from jax._src.lib.mlir import ir
    import numpy as np
    if call.api_version not in (1, 2, 3):
        raise ArtifactError(f"{what}: {call.location}: the custom call to {call.target!r} has "
                            f"api_version {call.api_version}; a legacy call is 1, 2 or 3")
    for i, v in enumerate(op.operands):
        if "tuple" in str(v.type):
            raise ArtifactError(
                f"{what}: {call.location}: operand {i} of {call.target!r} is a tuple "
                f"({v.type}); a typed-FFI call takes arrays, and XLA would hand the legacy "
                "kernel a nested pointer table that ccshim does not rebuild")
    called = _attr(op, "called_computations")
    if called is not None and len(ir.ArrayAttr(called)):
        raise ArtifactError(f"{what}: {call.location}: {call.target!r} has called "
                            "computations, which a legacy kernel cannot have been given")
    new = typed_name(call.target, call.api_version, prefix)
    config = _attr(op, "backend_config")
    blob = _string(config) if config is not None else b""
    attrs = {}
    if blob:
        attrs[OPAQUE_ATTR] = ir.DenseElementsAttr.get(
            np.frombuffer(blob, np.uint8), type=ir.IntegerType.get_unsigned(8))
    if any("tuple" in str(r.type) for r in op.results):
        op = _flatten_tuple_result(op, call, what)
    op.attributes["call_target_name"] = ir.StringAttr.get(new)
    op.attributes["api_version"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4)
    op.attributes["backend_config"] = ir.DictAttr.get(attrs)
    return new


def _flatten_tuple_result(op, call: Call, what: str):
    """A custom call whose one result is a flat tuple, as older lowerings
    wrote multiple results (read with get_tuple_element), made a call with
    the tuple's elements as its results: the same buffers, which XLA hands a
    legacy kernel as the same table of pointers."""
    from jax._src.lib.mlir import ir
    if len(op.results) != 1:
        raise ArtifactError(f"{what}: {call.location}: {call.target!r} returns tuples among "
                            "other results; only one flat tuple result is understood")
    tup = ir.TupleType(op.results[0].type)
    types = [tup.get_type(i) for i in range(tup.num_types)]
    if any("tuple" in str(t) for t in types):
        raise ArtifactError(f"{what}: {call.location}: {call.target!r} returns a nested tuple, "
                            "which a typed-FFI call cannot return")
    users = [use.owner for use in op.results[0].uses]
    for user in users:
        if user.name != "stablehlo.get_tuple_element":
            raise ArtifactError(f"{what}: {call.location}: the tuple {call.target!r} returns "
                                f"is used by {user.name}, not only read element by element")
    names = [a if isinstance(a, str) else a.name for a in op.attributes]
    attributes = {name: op.attributes[name] for name in names}
    with ir.InsertionPoint(op), op.location:
        flat = ir.Operation.create("stablehlo.custom_call", results=types,
                                   operands=list(op.operands), attributes=attributes)
    for user in users:
        index = int(ir.IntegerAttr(user.attributes["index"]).value)
        user.results[0].replace_all_uses_with(flat.results[index])
        user.erase()
    op.erase()
    return flat


# --- Registering and loading ---------------------------------------------------------


def needed(src: Any, *, prefix: str = DEFAULT_PREFIX, platform: str | None = None) -> list[dict]:
    """The typed targets a rewritten artifact calls, each with the legacy
    target and form it stands for and the platform(s) it runs on."""
    art = read(src, platform=platform)
    out: dict[str, dict] = {}
    for call in art.calls(prefix):
        if call.kind == "ccshim":
            legacy, form = _legacy_of(call.target, prefix)
            out.setdefault(call.target, {"typed": call.target, "legacy": legacy,
                                         "api_version": form, "platforms": list(art.platforms)})
    return sorted(out.values(), key=lambda t: t["typed"])


def _kernel_for(kernels: Any, legacy: str, platform: str):
    """The kernel ``kernels`` gives for a legacy target, or None: a mapping
    of name to kernel, a registrations() mapping in jaxlib's newer shape
    ({platform: [(name, capsule, api_version)]}), or a function of the name."""
    from . import _modules
    if callable(kernels) and not isinstance(kernels, Mapping):
        return kernels(legacy)
    if not isinstance(kernels, Mapping):
        raise TypeError("kernels must be a mapping of legacy target name to kernel, a "
                        "registrations() mapping, or a function of the name; got "
                        f"{type(kernels).__name__}")
    return _modules.entry(kernels, legacy, platform)


def register(src: Any, kernels: Any, *, prefix: str = DEFAULT_PREFIX,
             platform: str | None = None, probe: bool = True) -> dict:
    """Registers with JAX, through ccshim, every kernel a rewritten artifact
    needs, each under its typed name with its form: ``kernels`` maps legacy
    target names to kernels (a PyCapsule, an address, a ctypes function, a
    ``(library, symbol)`` pair), or is an extension's ``registrations()``.
    Every needed target is looked up before anything is registered; one
    that ``kernels`` lacks is an error naming it.  Returns typed name ->
    Adapter."""
    from . import jax as cj
    plan, missing = [], []
    for t in needed(src, prefix=prefix, platform=platform):
        where = platform or (t["platforms"][0] if len(t["platforms"]) == 1 else None)
        if where is None:
            raise ArtifactError(f"{t['typed']}: the artifact runs on "
                                f"{', '.join(t['platforms']) or 'an unknown platform'}; "
                                "pass platform= to say which kernels these are")
        kernel = _kernel_for(kernels, t["legacy"], where)
        if kernel is None:
            missing.append(f"{t['legacy']} (api_version {t['api_version']}, as {t['typed']})")
        else:
            plan.append((t, kernel, where))
    if missing:
        raise ArtifactError("no kernel given for the legacy target(s) this artifact needs: "
                            + "; ".join(missing))
    return {t["typed"]: cj.register_legacy(t["typed"], kernel, platform=where,
                                           api_version=t["api_version"], probe=probe)
            for t, kernel, where in plan}


def load(src: Any, *, prefix: str = DEFAULT_PREFIX, platform: str | None = None):
    """The jax.export.Exported of a rewritten artifact, after checking that
    every typed target it calls is registered through ccshim in this
    process: one that is not is an error naming the legacy target and the
    call that registers it, where XLA would say only that the name is
    unknown when the program compiles."""
    from . import jax as cj
    art = read(src, platform=platform)
    missing = []
    for t in needed(art, prefix=prefix):
        for where in t["platforms"] or ["cpu"]:
            if cj.registered(t["typed"], where) is None:
                missing.append(f"{t['typed']} on {where} (the legacy {t['legacy']}, "
                               f"api_version {t['api_version']})")
    if missing:
        raise ArtifactError(
            f"{art.what}: needs target(s) not registered through ccshim: {'; '.join(missing)}; "
            "register them with ccshim.export.register(artifact, kernels) or "
            "ccshim.jax.register_legacy(typed name, kernel, api_version=N)")
    return art.as_exported()


# --- Checking: the original on XLA's legacy path, the rewrite through ccshim -------------------


def _inputs_for(exported, inputs: Any, seed: int) -> list:
    import numpy as np
    if inputs is not None:
        values = list(inputs)
        if len(values) != len(exported.in_avals):
            raise ArtifactError(f"{len(values)} input(s) given; the artifact takes "
                                f"{len(exported.in_avals)}")
        return values
    rng = np.random.default_rng(seed)
    values = []
    for aval in exported.in_avals:
        dtype = np.dtype(aval.dtype)
        if dtype.kind == "c":
            v = rng.standard_normal(aval.shape) + 1j * rng.standard_normal(aval.shape)
        elif dtype.kind == "f":
            v = rng.standard_normal(aval.shape)
        elif dtype.kind == "b":
            v = rng.integers(0, 2, aval.shape)
        else:
            v = rng.integers(0, 8, aval.shape)
        values.append(np.asarray(v).astype(dtype))
    return values


def check(original: Any, rewritten: Any, kernels: Any, *, inputs: Any = None, seed: int = 0,
          prefix: str = DEFAULT_PREFIX, platform: str | None = None) -> dict:
    """Runs ``original`` with its legacy targets on XLA's legacy path
    (registered there from ``kernels``, while jaxlib still has that path)
    and ``rewritten`` through ccshim, on the same inputs (``inputs``, or
    drawn from ``seed``), and compares every output's bytes."""
    import jax
    import numpy as np
    from . import jax as cj
    orig = read(original, platform=platform)
    new = read(rewritten, platform=platform)
    legacy = sorted({(c.target, c.api_version) for c in orig.calls(prefix) if c.kind == "legacy"})
    where = platform or (orig.platforms[0] if len(orig.platforms) == 1 else None)
    if where is None:
        raise ArtifactError(f"{orig.what}: runs on {', '.join(orig.platforms) or 'an unknown '}"
                            "platform; pass platform=")
    missing = [t for t, _ in legacy if _kernel_for(kernels, t, where) is None]
    if missing:
        raise ArtifactError(f"no kernel given for {', '.join(missing)}")
    for target, _ in legacy:
        cj.register_xla_legacy(target, _kernel_for(kernels, target, where), platform=where)
    register(new, kernels, prefix=prefix, platform=where)
    exp_orig = orig.as_exported()
    exp_new = load(new, prefix=prefix)
    args = _inputs_for(exp_orig, inputs, seed)
    out_orig = jax.tree_util.tree_leaves(exp_orig.call(*args))
    out_new = jax.tree_util.tree_leaves(exp_new.call(*args))
    results = []
    for i, (a, b) in enumerate(zip(out_orig, out_new)):
        a, b = np.asarray(a), np.asarray(b)
        same = a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
        results.append({"output": i, "dtype": str(a.dtype), "shape": list(a.shape),
                        "equal": same,
                        "differing_bytes": 0 if same else _differing(a, b)})
    return {"original": orig.what, "rewritten": new.what, "platform": where,
            "reference": f"XLA's legacy custom-call path (jaxlib {_jaxlib_version()})",
            "legacy_targets": [t for t, _ in legacy], "outputs": results,
            "equal": all(r["equal"] for r in results) and len(out_orig) == len(out_new)}


def _differing(a, b) -> int:
    import numpy as np
    if a.shape != b.shape or a.dtype != b.dtype:
        return -1
    x = np.frombuffer(a.tobytes(), np.uint8)
    y = np.frombuffer(b.tobytes(), np.uint8)
    return int((x != y).sum())


def _jaxlib_version() -> str:
    import jaxlib
    return jaxlib.__version__


# --- The command ----------------------------------------------------------------------

USAGE = """\
usage: ccshim rewrite IN OUT [--platform P] [--to export|portable|bytecode|text]
                      [--prefix PFX] [--keep TARGET]... [--only TARGET]...
                      [--manifest FILE] [--json]
                      [--check --kernels MODULE[:ATTR] [--init FUNC] [--inputs FILE.npz]
                       [--seed S]]
       ccshim rewrite --list FILE... [--json]

Rewrites a jax.export artifact (or a StableHLO module: portable artifact,
MLIR bytecode or text) so that each legacy custom call (api_version 1-3)
becomes a typed-FFI call on the target ccshim wraps it as, PFX vN.TARGET
(default ccshim.vN.TARGET), its backend_config bytes carried intact as the
uint8 attribute "opaque".  IN is never modified; OUT is written whole or not
at all.

  --platform P     the platform of a plain module (cpu, cuda, rocm); an
                   exported artifact says its own
  --to KIND        the output kind (default: the input's); export wraps a
                   plain module as a jax.export artifact (needs --platform)
  --keep TARGET    leave this legacy target as it is
  --only TARGET    rewrite only this legacy target
  --manifest FILE  write the manifest (legacy target -> typed target, form,
                   signatures) as JSON
  --check          run IN with its legacy targets on XLA's legacy path and
                   OUT through ccshim on the same inputs; compare the bytes
  --kernels M[:A]  the kernels, for --check: a Python module (a name, or a
                   path to an extension) and its registrations() mapping, or
                   the attribute A (a mapping, or a function returning one)
  --init FUNC      call M.FUNC() first (jaxlib's LAPACK module: initialize)
  --inputs F.npz   the inputs for --check (arr_0, arr_1, ...); default:
                   drawn from --seed (0)
  --list           list every custom call in each FILE (legacy, typed,
                   builtin, ccshim) and change nothing

Exit status: 0 done (for --check: every output equal), 1 --check found a
difference, 2 bad input (the message says what was expected).

Examples:
  ccshim rewrite model.jax model.ccshim.jax --manifest model.targets.json
  ccshim rewrite lu_2023.mlirbc lu.jax --platform cpu --to export
  ccshim rewrite lu_2023.jax lu.jax --check --kernels jaxlib_old/_lapack.so --init initialize
  ccshim rewrite --list --json exported/*.jax
"""


def _load_python_kernels(spec: str, init: str | None):
    """A module's registrations() (or attribute) for --kernels MODULE[:ATTR]."""
    from . import _modules
    try:
        return _modules.registrations(spec, init)
    except _modules.ModuleError as e:
        raise ArtifactError(f"--kernels: {e}") from None


def _parse(argv: Sequence[str]) -> dict:
    opts: dict[str, Any] = {"keep": [], "only": [], "files": [], "json": False,
                            "check": False, "list": False, "tsv": False}
    valued = {"--platform", "--to", "--prefix", "--keep", "--only", "--manifest",
              "--kernels", "--init", "--inputs", "--seed", "--paths-file"}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            opts["help"] = True
        elif arg in ("--json", "--check", "--list", "--tsv"):
            opts[arg[2:]] = True
        elif arg in valued:
            if i + 1 >= len(argv):
                raise ArtifactError(f"{arg} needs a value")
            key = arg[2:]
            if key in ("keep", "only"):
                opts[key].append(argv[i + 1])
            else:
                opts[key] = argv[i + 1]
            i += 1
        elif arg.startswith("-"):
            raise ArtifactError(f"unknown option {arg}")
        else:
            opts["files"].append(arg)
        i += 1
    return opts


def _tsv(*fields) -> str:
    return "\t".join(str(f).replace("\t", " ").replace("\n", " ") for f in fields)


def _report_list(files: Sequence[str], form: str, out) -> int:
    """Lists each file's custom calls; a file that does not read is reported
    as such (exit status 2) and the others still listed.  ``form``: text,
    json, or tsv (for ccshim scan: one record a line, files by index)."""
    listing, failed = [], 0
    for i, f in enumerate(files):
        try:
            art = read(f)
            listing.append({"file": f, "kind": art.kind, "platforms": list(art.platforms),
                            "calls": [c.as_json() for c in art.calls()]})
        except Exception as e:  # noqa: BLE001 - one file's failure is that file's line
            failed += 1
            listing.append({"file": f, "error": str(e) if isinstance(e, ArtifactError)
                            else f"{type(e).__name__}: {_first_line(e)}"})
        entry = listing[-1]
        if form == "tsv":
            if "error" in entry:
                print(_tsv("E", i, entry["error"]), file=out)
                continue
            count = {k: sum(c["kind"] == k for c in entry["calls"])
                     for k in ("typed", "builtin", "ccshim")}
            print(_tsv("F", i, entry["kind"], ",".join(entry["platforms"]), count["typed"],
                       count["builtin"], count["ccshim"]), file=out)
            for c in entry["calls"]:
                if c["kind"] == "legacy":
                    print(_tsv("C", i, c["target"], c["api_version"], c["opaque_bytes"],
                               c["signature"], c["location"]), file=out)
        elif form == "text":
            if "error" in entry:
                print(f"{f}: not read: {entry['error']}", file=out)
                continue
            legacy = [c for c in entry["calls"] if c["kind"] == "legacy"]
            where = " for " + ", ".join(entry["platforms"]) if entry["platforms"] else ""
            print(f"{f}: {entry['kind']}{where}, {len(entry['calls'])} custom call(s), "
                  f"{len(legacy)} legacy", file=out)
            for c in entry["calls"]:
                extra = f", opaque {c['opaque_bytes']} bytes" if c["kind"] == "legacy" else ""
                print(f"  {c['kind']:8} {c['target']} api_version {c['api_version']}{extra}: "
                      f"{c['signature']}", file=out)
    if form == "json":
        json.dump(listing, out, indent=2)
        out.write("\n")
    return 2 if failed else 0


def main(argv: Sequence[str] | None = None, out=None) -> int:
    """``ccshim rewrite``: exit 0 done, 1 --check found a difference, 2 bad input."""
    out = out or sys.stdout
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        import jax
        # an artifact with 64-bit types runs only so (the command's process)
        jax.config.update("jax_enable_x64", True)
    except ImportError:
        pass
    try:
        opts = _parse(argv)
        if opts.get("help"):
            out.write(USAGE)
            return 0
        if opts["list"]:
            files = list(opts["files"])
            if opts.get("paths-file"):  # NUL-separated, as ccshim scan passes them
                raw = pathlib.Path(opts["paths-file"]).read_bytes()
                files += [os.fsdecode(p) for p in raw.split(b"\0") if p]
            if not files:
                raise ArtifactError("--list needs at least one FILE")
            return _report_list(files, "tsv" if opts["tsv"] else
                                "json" if opts["json"] else "text", out)
        if len(opts["files"]) != 2:
            raise ArtifactError(f"expected IN and OUT, got {len(opts['files'])} path(s)")
        src, dst = (pathlib.Path(p) for p in opts["files"])
        if dst.exists() and src.exists() and dst.resolve() == src.resolve():
            raise ArtifactError(f"OUT is IN ({src}); the input is never overwritten")
        if opts["check"] and not opts.get("kernels"):
            raise ArtifactError("--check needs --kernels MODULE[:ATTR]")
        done = rewrite(src, prefix=opts.get("prefix", DEFAULT_PREFIX),
                       platform=opts.get("platform"), to=opts.get("to"),
                       keep=opts["keep"], only=opts["only"] or None)
        kernels = None
        if opts["check"]:  # every kernel found before anything is written
            kernels = _load_python_kernels(opts["kernels"], opts.get("init"))
            where = opts.get("platform") or (done.platforms[0] if done.platforms else "cpu")
            missing = [t["legacy"] for t in done.targets
                       if _kernel_for(kernels, t["legacy"], where) is None]
            if missing:
                raise ArtifactError(f"--kernels {opts['kernels']}: no kernel for the legacy "
                                    f"target(s) {', '.join(missing)} of {src}")
        _write_whole(dst, done.data)
        manifest = dict(done.manifest(), input=str(src), output=str(dst))
        if opts.get("manifest"):
            _write_whole(pathlib.Path(opts["manifest"]),
                         (json.dumps(manifest, indent=2) + "\n").encode())
        report = None
        if opts["check"]:
            inputs = None
            if opts.get("inputs"):
                import numpy as np
                with np.load(opts["inputs"]) as z:
                    inputs = [z[f"arr_{i}"] for i in range(len(z.files))]
            seed = int(opts.get("seed", 0))
            # (a plain module runs as the exported artifact it makes: as_exported)
            report = check(src, dst, kernels, inputs=inputs, seed=seed,
                           prefix=opts.get("prefix", DEFAULT_PREFIX),
                           platform=opts.get("platform"))
        if opts["json"]:
            json.dump(dict(manifest, check=report), out, indent=2)
            out.write("\n")
        else:
            n = sum(t["calls"] for t in done.targets)
            print(f"{dst}: {n} legacy call(s) to {len(done.targets)} target(s) rewritten; "
                  f"{len(done.kept)} custom call(s) left alone", file=out)
            for t in done.targets:
                print(f"  {t['legacy']} (api_version {t['api_version']}) -> {t['typed']}, "
                      f"{t['calls']} call(s)", file=out)
            if report is not None:
                print(f"check against {report['reference']}:", file=out)
                for r in report["outputs"]:
                    state = "equal" if r["equal"] else f"DIFFERENT ({r['differing_bytes']} bytes)"
                    print(f"  output {r['output']} {r['dtype']}{r['shape']}: {state}", file=out)
        return 0 if report is None or report["equal"] else 1
    except ArtifactError as e:
        print(f"ccshim rewrite: {e}", file=sys.stderr)
        return 2
    except (TypeError, ValueError, OSError) as e:
        print(f"ccshim rewrite: {_first_line(e)}", file=sys.stderr)
        return 2
    except Exception as e:  # JAX's or XLA's own errors, e.g. from --check's runs
        print(f"ccshim rewrite: {type(e).__name__}: {_first_line(e)}", file=sys.stderr)
        return 2


def _write_whole(path: pathlib.Path, data: bytes) -> None:
    """Writes a file whole or not at all (a temporary beside it, renamed)."""
    tmp = path.with_name(f".{path.name}.ccshim-tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise ArtifactError(f"{path}: cannot write it: {e.strerror}") from None


if __name__ == "__main__":
    sys.exit(main())
