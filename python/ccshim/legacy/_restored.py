"""The custom-call plumbing JAX has removed or changed since extensions of
JAX 0.2.x-0.6.x were written, put back while zero-change mode is on.

An extension of those years defines, registers, lowers, differentiates and
batches its custom-call primitive with a handful of names that later JAX
releases removed (``jax.lib.xla_client.register_custom_call_target``,
``jaxlib.hlo_helpers.custom_call``, ``jax.core.Primitive``, ...).  Each entry
of ``RESTORED`` is one of them, with the release that removed (or changed)
it and what it maps onto in the running JAX; ``install`` puts back only the
names the running JAX lacks, and ``uninstall`` takes back what it put.

The line drawn: only names that the custom-call rules of real extensions
(celerite2 0.3.2, exoplanet-core 0.3.1, jax-finufft 0.1.0, mpi4jax
0.8.1.post2, veros 1.7.0, the census's (docs/census.md), and those a scan of
others from PyPI found: jax-triton 0.1.3, jaxdecomp 0.2.0, exoplanet-core
0.1.2; docs/legacy.md) use to define, register, lower, differentiate and
batch their primitives, and what their own tests use right beside their
custom calls where it is a thin alias of what JAX still has
(jax.experimental.enable_x64); each only as the running JAX still offers it
under another name.  No other general JAX API, and nothing that needs
machinery JAX no longer has:
``NOT_RESTORED`` names what an extension of those years may still hit, and
the error it then gets says what the name was and where its use moved.

docs/legacy.md's table is this module's RESTORED and NOT_RESTORED, checked
by tests/python/test_legacy_plumbing.py.  Which names exist to restore is
not this list's guess: dev/legacy_surface/ derives, from the released jax
and jaxlib packages, every name JAX removed in these families (the
per-platform register_cpu_custom_call_target and the jax.config module
among them); docs/legacy-surface.md gives each with its release and this
module's answer, and tests/python/test_legacy_surface.py holds a restored
name's release here to the derived one.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable

from .. import _jax_internals
from . import _xlabuilder

__all__ = ["RESTORED", "NOT_RESTORED", "install", "uninstall", "installed"]


@dataclass(frozen=True)
class Restored:
    name: str       # as extensions wrote it
    removed: str    # the JAX release that removed or changed it
    now: str        # what it maps onto in the running JAX


@dataclass(frozen=True)
class NotRestored:
    name: str
    removed: str
    why: str        # why not, and where its use moved

    @property
    def message(self) -> str:
        """What a use of the name is told."""
        return (f"{self.name} was removed in JAX {self.removed}; ccshim.legacy does not "
                f"restore it: {self.why}")


RESTORED = (
    Restored("jax.lib.xla_client.register_custom_call_target", "0.6.0 (the module: 0.9.0)",
             "recorded by ccshim.legacy, as jax.ffi.register_ffi_target(..., api_version=0) "
             "is; api_version=1 passes to jax.ffi.register_ffi_target"),
    Restored("jaxlib.xla_client.register_cpu_custom_call_target", "0.4.18 (jaxlib; 0.4.13 the last on PyPI with it)",
             "recorded by ccshim.legacy, as register_custom_call_target(name, fn, "
             "platform=\"cpu\") is: the alias it always was"),
    Restored("jax.lib.xla_client.register_cpu_custom_call_target", "0.4.18 (with jaxlib's: it was jaxlib's module)",
             "the same, on the restored jax.lib.xla_client"),
    Restored("jax.extend.ffi.register_ffi_target, pycapsule, include_dir, ffi_call, "
             "ffi_lowering", "0.7.0 (the module: 0.8.0)",
             "jax.ffi's own, as JAX 0.5.0 to 0.6.2 gave them under this name; a registration "
             "with api_version=0 recorded by ccshim.legacy, a typed one passed to jax.ffi"),
    Restored("jaxlib.hlo_helpers.custom_call", "0.8.0 (the module)",
             "jax._src.interpreters.mlir.custom_call (the same keywords: result_types, "
             "operands, operand_layouts, ...; returns the op)"),
    Restored("jax.interpreters.mlir.custom_call", "0.8.0",
             "jax._src.interpreters.mlir.custom_call"),
    Restored("jax.interpreters.mlir.hlo", "0.6.0",
             "the StableHLO dialect module it was (jax._src.lib.mlir.dialects' hlo): what "
             "lowering rules build their custom call with, hlo.CustomCallOp"),
    Restored("jax.interpreters.mlir.aval_to_ir_type(aval)", "0.10.1 (takes ctx, aval)",
             "jax.interpreters.mlir.aval_to_ir_type, with or without the lowering context"),
    Restored("jax.core.Primitive", "0.6.0",
             "jax.extend.core.Primitive; a NumPy-array parameter of bind (unhashable, which "
             "JAX 0.7.0 refuses) reaches the rules as a read-only array of the same values "
             "that hashes and compares whole (== gives one bool)"),
    Restored("jax.abstract_arrays.ShapedArray", "0.4.16 (the module: 0.4.17)", "jax.core.ShapedArray"),
    Restored("jax.core.raise_to_shaped", "0.6.0 (a no-op since 0.4.36)",
             "the aval itself, as JAX 0.4.36 to 0.5 gave it back"),
    Restored("jax.interpreters.ad.Zero.from_value", "0.4.34 (renamed from_primal_value, "
             "since gone)", "ad.Zero(jax.typeof(x).to_tangent_aval())"),
    Restored("jax.interpreters.ad.primitive_jvps: None as an output tangent",
             "0.5.0 (an error the moment the rule returns)",
             "kept as JAX 0.4 kept it: that output's tangent is None, an error only where it "
             "is used (never taken for a zero)"),
    Restored("jax.core.get_aval", "0.10.0", "jax.typeof"),
    Restored("jax.lax.zeros_like_array", "0.9.0", "jax.lax.full_like(x, 0)"),
    Restored("jax.interpreters.batching.moveaxis", "0.9.0", "jax.numpy.moveaxis"),
    Restored("jax.interpreters.batching.not_mapped", "0.10.2", "None (what it always was)"),
    Restored("jax.interpreters.mlir.ir_constant(a Python scalar)", "0.7.2 (wants aval=)",
             "the constant JAX 0.7.1 made of it: int64, float64, complex128 or bool, "
             "whatever the x64 setting; ir_constants too"),
    Restored("jax.experimental.enable_x64, disable_x64", "0.9.0",
             "context managers over jax.enable_x64(True / False): what extensions' own "
             "tests wrap their calls in (jax-finufft 0.1.0's)"),
    Restored("jax.config (the module): from jax.config import config", "0.4.25 (config; the module: 0.4.29)",
             "a module whose config is jax.config, JAX's configuration object (update, read, "
             "parse_flags_with_absl): what extensions' own tests import; jax.config itself "
             "stays that object"),
    Restored("jax.interpreters.xla.backend_specific_translations, translations",
             "0.4.29",
             "a translation rule put there becomes its primitive's MLIR lowering, run with an "
             "emulated XlaBuilder (ccshim/legacy/_xlabuilder.py; planet-harmonica 0.1.1's)"),
    Restored("jax._src.interpreters.xla._backend_specific_translations",
             "0.4.35 (the module: 0.7.2)",
             "the same, for rules of JAX 0.4.14 to 0.4.34's signature (ctx, avals_in, "
             "avals_out, *operands) (klujax 0.2.10's)"),
    Restored("xla_client.ops (jaxlib's and jax.lib's)", "0.6.0 (with XlaBuilder)",
             "what custom-call translation rules use: ConstantLiteral, Reshape, Transpose, "
             "Tuple, GetTupleElement, CustomCall, CustomCallWithLayout (layouts, opaque, "
             "has_side_effect, api_version), emitting StableHLO; jaxlib's xla_client.Shape "
             "serves as it is; any other operation is an error naming it"),
)

NOT_RESTORED = (
    NotRestored("jaxlib.hlo_helpers (all but custom_call)", "0.8.0",
                "general MLIR helpers (hlo_const, hlo_s32, ...), not custom-call plumbing: "
                "jax.interpreters.mlir.ir_constant and jaxlib.mlir's dialects"),
    NotRestored("jax.extend.core.Primitive.bind with an unhashable parameter", "0.7.0",
                "a primitive made through today's name is today's code: JAX's own error names "
                "the primitive and the parameter; give it as a tuple (one made through the "
                "restored jax.core.Primitive takes NumPy arrays, above)"),
)

# What install() put back: (object or sys.modules, attribute or key, the
# value it had or _ABSENT).
_ABSENT = object()
_undo: list[tuple[Any, str, Any]] = []


def installed() -> list[str]:
    """The names put back in this process (modules by their own name)."""
    return list(dict.fromkeys(attr if isinstance(owner, dict) else f"{owner.__name__}.{attr}"
                              for owner, attr, _ in _undo))


def install(register: Callable[..., Any]) -> None:
    """Puts back each name of RESTORED that the running JAX lacks.
    ``register`` is zero-change mode's recorder with xla_client's signature
    (name, fn, platform="cpu", api_version=0): the restored
    register_custom_call_target itself."""
    if _undo:
        return
    import jax
    import jax.core
    import jax.lax
    import jax.numpy as jnp
    mlir_src = _jax_internals.mlir()
    from jax.extend import core as extend_core
    from jax.interpreters import ad, batching, mlir, xla

    _xla_client_module(register)
    _cpu_registration()
    _extend_ffi()
    hlo_helpers = _module("jaxlib.hlo_helpers", "custom_call", "0.8.0")
    if hlo_helpers is not None:
        _put(hlo_helpers, "custom_call", mlir_src.custom_call)
    _put_missing(mlir, "custom_call", mlir_src.custom_call)
    _put_missing(mlir, "hlo", importlib.import_module("jax._src.lib.mlir.dialects").hlo)
    _aval_to_ir_type(mlir)
    _put_missing(jax.core, "Primitive", _legacy_primitive(extend_core.Primitive))
    abstract_arrays = _module("jax.abstract_arrays", "ShapedArray", "0.4.17")
    if abstract_arrays is not None:
        _put(abstract_arrays, "ShapedArray", jax.core.ShapedArray)
    _put_missing(jax.core, "raise_to_shaped", _raise_to_shaped)
    _put_missing(ad.Zero, "from_value", staticmethod(_zero_from_value))
    _none_tangents()
    _put_missing(jax.core, "get_aval", jax.typeof)
    _put_missing(jax.lax, "zeros_like_array", _zeros_like_array)
    _put_missing(batching, "moveaxis", jnp.moveaxis)
    _put_missing(batching, "not_mapped", None)
    _translation_rules(xla)
    _ir_constant(mlir)
    experimental = importlib.import_module("jax.experimental")
    _put_missing(experimental, "enable_x64", _enable_x64)
    _put_missing(experimental, "disable_x64", _disable_x64)
    _config_module(jax)


def uninstall() -> None:
    """Takes back everything install() put, newest first."""
    while _undo:
        owner, attr, old = _undo.pop()
        if old is _ABSENT:
            if isinstance(owner, dict):
                owner.pop(attr, None)
            else:
                try:
                    delattr(owner, attr)
                except AttributeError:
                    pass
        elif isinstance(owner, dict):
            owner[attr] = old
        else:
            setattr(owner, attr, old)


@contextlib.contextmanager
def _enable_x64(new_val: bool = True):
    import jax
    with jax.enable_x64(new_val):
        yield


@contextlib.contextmanager
def _disable_x64():
    import jax
    with jax.enable_x64(False):
        yield


# The dtypes JAX up to 0.7.1 gave a Python scalar's constant (whatever the
# x64 setting): its python_scalar_dtypes.
_SCALAR_DTYPES = ((bool, "bool"), (int, "int64"), (float, "float64"), (complex, "complex128"))


def _ir_constant(mlir: types.ModuleType) -> None:
    """From 0.7.2 ir_constant (and ir_constants) of a Python scalar asserts
    unless given its aval=; a lowering rule of earlier years passes the
    scalar alone (an element count, an object's id()), and got the constant
    of its Python type's dtype."""
    import numpy as np
    for name in ("ir_constant", "ir_constants"):
        current = getattr(mlir, name, None)
        if current is None or "aval" not in inspect.signature(current).parameters:
            continue

        def constant(val, *args, _current=current, **kwargs):
            if not args and kwargs.get("aval") is None and not isinstance(val, np.generic):
                for python_type, dtype in _SCALAR_DTYPES:
                    if isinstance(val, python_type):
                        return _current(np.array(val, dtype), **kwargs)
            return _current(val, *args, **kwargs)
        constant.__wrapped__ = current
        _put(mlir, name, constant)


def _legacy_primitive(base: type) -> type:
    """jax.extend.core.Primitive as extensions of JAX's 0.4 years used
    jax.core.Primitive: bind takes NumPy-array parameters (jax-finufft 0.1.0's
    output_shape), which JAX 0.7.0 refuses as unhashable; each reaches the
    rules as a read-only array of the same values that hashes and compares
    whole (== gives one bool; arithmetic on it gives plain arrays)."""
    import numpy as np

    class FrozenArray(np.ndarray):
        def __hash__(self):
            return hash((self.shape, self.dtype.str, self.tobytes()))

        def __eq__(self, other):
            if not isinstance(other, np.ndarray):
                return NotImplemented
            return (self.shape == other.shape and self.dtype == other.dtype
                    and self.tobytes() == np.ascontiguousarray(other).tobytes())

        def __ne__(self, other):
            equal = self.__eq__(other)
            return equal if equal is NotImplemented else not equal

        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            plain = [x.view(np.ndarray) if isinstance(x, FrozenArray) else x for x in inputs]
            return getattr(ufunc, method)(*plain, **kwargs)

    def frozen(value):
        if isinstance(value, np.ndarray) and not isinstance(value, FrozenArray):
            value = np.array(value, copy=True).view(FrozenArray)
            value.flags.writeable = False
        return value

    class Primitive(base):
        def bind(self, *args, **params):
            return super().bind(*args, **{k: frozen(v) for k, v in params.items()})

    return Primitive


def _zero_from_value(x):
    import jax
    from jax.interpreters import ad
    return ad.Zero(jax.typeof(x).to_tangent_aval())


def _raise_to_shaped(aval, weak_type=None):
    return aval


def _zeros_like_array(x):
    import jax.lax
    return jax.lax.full_like(x, 0)


def _has(owner: Any, attr: str) -> bool:
    try:
        getattr(owner, attr)
    except (AttributeError, ImportError):
        return False
    return True


def _put(owner: Any, attr: str, value: Any) -> None:
    old = owner.__dict__.get(attr, _ABSENT)
    setattr(owner, attr, value)
    _undo.append((owner, attr, old))


def _put_missing(owner: Any, attr: str, value: Any) -> None:
    if not _has(owner, attr):
        _put(owner, attr, value)


def _module(fullname: str, only: str, removed: str) -> types.ModuleType | None:
    """A module of that name, made and entered in sys.modules (and on its
    parent) when the running JAX has none; None when it has one."""
    try:
        importlib.import_module(fullname)
        return None
    except ImportError:
        pass
    parent_name, _, leaf = fullname.rpartition(".")
    parent = importlib.import_module(parent_name)
    module = types.ModuleType(fullname, f"{fullname}, removed in JAX {removed}: its "
                              f"custom-call plumbing restored by ccshim.legacy ({only})")

    def __getattr__(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise AttributeError(
            f"{fullname}.{attr}: {fullname} was removed in JAX {removed}; ccshim.legacy "
            f"restores only its custom-call plumbing ({only}), not {attr}")
    module.__getattr__ = __getattr__
    _undo.append((sys.modules, fullname, sys.modules.get(fullname, _ABSENT)))
    sys.modules[fullname] = module
    _put(parent, leaf, module)
    return module


def _xla_client_module(register: Callable[..., Any]) -> None:
    """jax.lib.xla_client with register_custom_call_target, and the emulated
    XlaBuilder's ops and Shape where it lacks them, where the running JAX has
    no module or a module without register_custom_call_target."""
    client = _module("jax.lib.xla_client", "register_custom_call_target", "0.9.0")
    if client is None:
        from jax.lib import xla_client as client
        if _has(client, "register_custom_call_target"):
            return  # JAX to 0.5: ccshim.legacy intercepts the real one
    _put(client, "register_custom_call_target", register)
    _put_missing(client, "ops", _xlabuilder.OPS)
    from jaxlib import xla_client as jaxlib_client
    _put_missing(client, "Shape", jaxlib_client.Shape)


def _cpu_registration() -> None:
    """register_cpu_custom_call_target(name, fn), xla_client's alias of
    register_custom_call_target(name, fn, platform="cpu") (jaxlib 0.1.x to
    0.4.x), on jaxlib.xla_client and jax.lib.xla_client where they lack it.
    It calls the module's register_custom_call_target at call time: the
    mode's recorder, api_version 0 as the alias always registered."""
    from jaxlib import xla_client as jaxlib_client
    clients = [jaxlib_client]
    jax_lib_client = sys.modules.get("jax.lib.xla_client")
    if jax_lib_client is not None and jax_lib_client is not jaxlib_client:
        clients.append(jax_lib_client)
    for client in clients:
        if _has(client, "register_cpu_custom_call_target"):
            continue

        def register_cpu_custom_call_target(name, fn, _client=client):
            return _client.register_custom_call_target(name, fn, platform="cpu")
        _put(client, "register_cpu_custom_call_target", register_cpu_custom_call_target)


def _extend_ffi() -> None:
    """jax.extend.ffi (JAX 0.4.31 to 0.7.2; its names gone from 0.7.0): what
    JAX 0.5.0 to 0.6.2 gave under it, jax.ffi's own functions.
    register_ffi_target looks jax.ffi's up at each call: the mode's recorder
    while the mode is on."""
    import jax.ffi
    module = _module("jax.extend.ffi", "register_ffi_target, pycapsule, include_dir, "
                     "ffi_call, ffi_lowering", "0.8.0")
    if module is None:
        module = importlib.import_module("jax.extend.ffi")

    def register_ffi_target(*args, **kwargs):
        return jax.ffi.register_ffi_target(*args, **kwargs)
    _put_missing(module, "register_ffi_target", register_ffi_target)
    for name in ("pycapsule", "include_dir", "ffi_call", "ffi_lowering"):
        _put_missing(module, name, getattr(jax.ffi, name))


def _config_module(jax: types.ModuleType) -> None:
    """The jax.config module (removed in JAX 0.4.29), whose one name test
    suites imported, config, is JAX's configuration object, today's
    jax.config.  Entered in sys.modules only: the package's attribute
    jax.config stays that object, so jax.config.update(...) is unchanged."""
    if "jax.config" in sys.modules:
        return
    try:
        importlib.import_module("jax.config")
        return
    except ImportError:
        pass
    module = types.ModuleType("jax.config", "jax.config, removed in JAX 0.4.29: restored by "
                              "ccshim.legacy (config, JAX's configuration object)")
    module.config = jax.config

    def __getattr__(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise AttributeError(
            f"jax.config.{attr}: the module jax.config was removed in JAX 0.4.29; "
            f"ccshim.legacy restores only its config (JAX's configuration object, "
            f"jax.config), not {attr}")
    module.__getattr__ = __getattr__
    _undo.append((sys.modules, "jax.config", _ABSENT))
    sys.modules["jax.config"] = module


def _translation_rules(xla: types.ModuleType) -> None:
    """XlaBuilder translation rules, run as MLIR lowerings (_xlabuilder):
    the public registries (old-style rules), the private one of JAX 0.4.14
    to 0.4.34 (new-style rules; its module is gone from 0.7.2), and
    xla_client.ops on jaxlib's own xla_client, which extensions import."""
    _put_missing(xla, "backend_specific_translations", _xlabuilder.Translations(False))
    _put_missing(xla, "translations", _xlabuilder.Rules(None, False))
    private = _module("jax._src.interpreters.xla", "_backend_specific_translations", "0.7.2")
    if private is None:
        private = importlib.import_module("jax._src.interpreters.xla")
    _put_missing(private, "_backend_specific_translations", _xlabuilder.Translations(True))
    from jaxlib import xla_client as jaxlib_client
    _put_missing(jaxlib_client, "ops", _xlabuilder.OPS)


def _aval_to_ir_type(mlir: types.ModuleType) -> None:
    """Since 0.10.1 aval_to_ir_type takes the lowering context first; an
    extension's rule calls it with the aval alone."""
    current = mlir.aval_to_ir_type
    if list(inspect.signature(current).parameters)[:1] != ["ctx"]:
        return

    def aval_to_ir_type(*args, **kwargs):
        if len(args) + len(kwargs) == 1:
            # The context only caches; a fresh cache for a call without one.
            return current(types.SimpleNamespace(aval_to_ir_types_cache={}), *args, **kwargs)
        return current(*args, **kwargs)
    aval_to_ir_type.__wrapped__ = current
    _put(mlir, "aval_to_ir_type", aval_to_ir_type)


def _none_tangents() -> None:
    """An extension's JVP rule may give None as the tangent of an output it
    does not differentiate (celerite2's extra outputs, exoplanet-core's
    derivative outputs).  To JAX 0.4.x that output's tracer held None, an
    error only if something used that tangent; from 0.5.0 the rule's return
    is an error at once (its tangent's dtype is asked).  The tracer is made
    as 0.4.x made it; a zero would let a higher derivative through the
    output quietly wrong, which the extensions' own comments warn of."""
    ad = _jax_internals.ad()
    current = ad.maybe_jvp_tracer

    def maybe_jvp_tracer(trace, primal, tangent):
        if tangent is None:
            return ad.JVPTracer(trace, primal, None)
        return current(trace, primal, tangent)
    maybe_jvp_tracer.__wrapped__ = current
    _put(ad, "maybe_jvp_tracer", maybe_jvp_tracer)
