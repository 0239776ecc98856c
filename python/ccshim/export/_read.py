"""Reading a program: a jax.export artifact, a StableHLO portable
artifact, MLIR bytecode or text, through JAX's own machinery; and writing
it back at the running JAX's versions."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import sys
from typing import Any

from .. import _branches, _jax_internals
from .._hlo import describe_call, hlo_type, walk
from ._common import (BYTECODE_MAGIC, DEFAULT_PREFIX, ArtifactError, Call, _describe_bytes,
                      _first_line, _jax, _jax_version, _looks_like_text, file_kind)


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
        # a jax.export artifact's serialization version, as read
        self.serialization_version: int | None = None
        if not data:
            raise ArtifactError(f"{what}: empty; expected a jax.export artifact or a "
                                "StableHLO module (bytecode or text)")
        from . import _guard
        _guard.survives_reading(data, what)
        native = _NativeErrors()
        try:
            with self.context, native:
                self._read(data, jax_export, jax_ext, ir)
        except ArtifactError as e:
            said = native.first()
            raise ArtifactError(f"{e} [{said}]" if said else str(e)) from None
        if platform is not None:
            from .._core import export_platform_name
            canonical = export_platform_name(platform)
            if self.platforms and canonical not in self.platforms:
                raise ArtifactError(f"{what}: was exported for {', '.join(self.platforms)}; "
                                    f"--platform {platform} contradicts it")
            self.platforms = (canonical,)  # of several, the one asked for

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
        _export, serialization = _jax_internals.export_module(), _jax_internals.serialization()
        try:
            newest = getattr(serialization, "_SERIALIZATION_VERSION", None)
            root = serialization.ser_flatbuf.Exported.GetRootAsExported(data, 0)
            version = self.serialization_version = root.SerializationVersion()
            if newest is not None and version > newest:
                raise ArtifactError(
                    f"{self.what}: a jax.export artifact of serialization version {version}, "
                    f"from a newer JAX; this JAX {_jax_version()} reads up to {newest}")
            exported = self._deserialize(data, jax_export)
        except ArtifactError:
            raise
        except NotImplementedError as e:  # JAX 0.6/0.7: a version they do not read
            raise ArtifactError(
                f"{self.what}: a jax.export artifact of serialization version {version}, which "
                f"this JAX {_jax_version()} does not read ({_first_line(e)}); JAX 0.8 to 0.12 "
                "read it through ccshim") from None
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

    def _deserialize(self, data, jax_export):
        """jax.export.deserialize, and where the running JAX refuses an
        artifact as past its backward-compatibility window (0.11.2 on), the
        same through _expired, which upgrades what can be upgraded exactly."""
        try:
            return jax_export.deserialize(data)  # bytes serve; a bytearray would copy
        except ValueError as e:
            if "compatibility window" not in str(e):
                raise
        from . import _expired
        return _expired.deserialize(data, self.what)

    # -- what is inside --

    def custom_calls(self, prefix: str = DEFAULT_PREFIX) -> list[tuple[Any, Call]]:
        """(operation, Call) for every custom call, in module order; where
        the artifact's platforms are known, each Call's ``platforms`` are
        those of them that reach it (ccshim._branches)."""
        found = []
        with self.context:
            reach = None
            if self.platforms:
                # a jax.export artifact's platforms, all of them, in the order of
                # its module's platform index; else those it was read for
                ordered = self.exported is not None
                reach = _branches.reaching(
                    self.module, tuple(self.exported.platforms) if ordered else self.platforms,
                    ordered=ordered)
            for op in walk(self.module.operation):
                if op.name == "stablehlo.custom_call":
                    call = describe_call(op, prefix)
                    if reach is not None:
                        call.platforms = tuple(p for p in reach.get(op, ())
                                               if p in self.platforms)
                    found.append((op, call))
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
        core = _jax_internals.core()
        _export = _jax_internals.export_module()
        if len(self.platforms) != 1:
            raise ArtifactError(f"{self.what}: a plain module does not say its platform; "
                                "pass platform= (--platform) to write it as an exported artifact")
        main = _main_function(self.module, self.what)
        ir = _jax_internals.ir()
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


def _main_function(module, what):
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func" and str(op.attributes["sym_name"]).strip('"') == "main":
            return op
    raise ArtifactError(f"{what}: no function named main")


def _aval(t, what, core):
    ir = _jax_internals.ir()
    from .._core import numpy_dtype
    try:
        ranked = ir.RankedTensorType(t)
    except (ValueError, TypeError):
        raise ArtifactError(f"{what} is {t}, not an array") from None
    if not ranked.has_static_shape:
        raise ArtifactError(f"{what} is {t}: shape-polymorphic modules are not wrapped as "
                            "exported artifacts here; rewrite the exported artifact instead")
    return core.ShapedArray(tuple(ranked.shape), numpy_dtype(hlo_type(ranked.element_type)))


def _calling_convention() -> int:
    config = _jax_internals.config()
    return config.jax_export_calling_convention_version.value


def _portable(module) -> bytes:
    """The module as a StableHLO portable artifact at the version jax.export
    writes (jax.export's own routine where this JAX has it)."""
    _export = _jax_internals.export_module()
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


def read_file(path: pathlib.Path) -> bytes:
    """A regular file's bytes, of any size memory holds, read once into one
    buffer (programs with constants baked in run to hundreds of MB).  Opened
    without blocking and refused unless a regular file, so that a FIFO or a
    device is never waited on (or read forever, as /dev/zero would be)."""
    import stat
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise ArtifactError(f"{path}: cannot read it: {e.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ArtifactError(f"{path}: is {file_kind(mode)}; expected a regular file "
                                "(an artifact)")
        f = open(fd, "rb", buffering=0)  # owns fd from here
    except BaseException as e:
        os.close(fd)
        if isinstance(e, OSError):
            raise ArtifactError(f"{path}: cannot read it: {e.strerror}") from None
        raise
    try:
        with f:  # readall sizes its one buffer from fstat: no chunks joined after
            return f.readall()
    except OSError as e:
        raise ArtifactError(f"{path}: cannot read it: {e.strerror}") from None


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
        data = read_file(path)
        return Artifact(data, platform=platform, what=str(path))
    raise TypeError("an artifact is a path, bytes, a jax.export.Exported or an Artifact; "
                    f"got {type(src).__name__}")
