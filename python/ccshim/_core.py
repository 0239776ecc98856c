"""The values of the package, one floor above its ctypes layer (_native):
errors, signatures, kernels found wherever legacy code keeps them, adapters
(wrap), platforms and dtype names, and where a pip installation keeps its
headers.  Everything here that the package offers is listed by
``ccshim/__init__.py``; the modules above import from here, never from the
package itself."""

from __future__ import annotations

import ctypes
import os
from typing import Any, NamedTuple

from . import _args, _native
from ._native import lib


class CcshimError(ValueError):
    """A ccshim call failed; the message says what was expected and what came."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = _native.status_name(status)


def _check(status: int, what: str | None) -> None:
    if status != 0:
        message = _native.last_error()
        # libccshim's messages often name the call already ("wrap: ...").
        if what and not message.startswith(f"{what}:"):
            message = f"{what}: {message}"
        raise CcshimError(status, message)


def version() -> str:
    """libccshim's version."""
    return lib.ccshim_version().decode()


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _installed(*parts: str) -> str:
    path = os.path.join(_PACKAGE, *parts)
    if not os.path.isdir(path):
        raise FileNotFoundError(
            f"{path} does not exist: this ccshim runs from a source tree, not a "
            "pip installation; its headers are in the tree's */include folders and "
            "its CMake package in the build folder")
    return path


def include_dir() -> str:
    """The folder of ccshim's C headers in a pip installation, as
    ``jax.ffi.include_dir()`` is jaxlib's: ``ccshim/ccshim.h`` and the other
    ccshim headers are below it, and XLA's legacy drop-ins
    (``xla/service/custom_call_status.h``, ...) below its ``ccshim/compat``
    (:func:`include_dirs` gives both)."""
    return _installed("include")


def include_dirs() -> list[str]:
    """Every folder a legacy kernel's compile needs: ccshim's headers and
    the drop-ins at XLA's include paths."""
    return [include_dir(), os.path.join(include_dir(), "ccshim", "compat")]


def cmake_dir() -> str:
    """The CMake package folder of a pip installation: pass it as
    ``-Dccshim_DIR=...`` for ``find_package(ccshim)``."""
    return _installed("lib", "cmake", "ccshim")


def library_path() -> str:
    """The libccshim file this package loaded."""
    return _native.library_path()


# HLO element type names and the numpy (or ml_dtypes) names they map to.
_NUMPY_NAMES = {
    "pred": "bool", "s8": "int8", "s16": "int16", "s32": "int32", "s64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f16": "float16", "f32": "float32", "f64": "float64", "bf16": "bfloat16",
    "c64": "complex64", "c128": "complex128", "s2": "int2", "s4": "int4",
    "u2": "uint2", "u4": "uint4", "f8e5m2": "float8_e5m2",
    "f8e4m3fn": "float8_e4m3fn", "f8e4m3b11fnuz": "float8_e4m3b11fnuz",
    "f8e5m2fnuz": "float8_e5m2fnuz", "f8e4m3fnuz": "float8_e4m3fnuz",
    "f8e4m3": "float8_e4m3", "f8e3m4": "float8_e3m4",
    "f4e2m1fn": "float4_e2m1fn", "f8e8m0fnu": "float8_e8m0fnu",
}


def dtype_name(number: int) -> str | None:
    """HLO name of an XLA_FFI_DataType number ("f32"), or None."""
    name = lib.ccshim_dtype_name(number)
    return name.decode() if name else None


def numpy_dtype(hlo_name: str):
    """The numpy dtype for an HLO element type name; None for tokens."""
    import numpy as np
    if hlo_name == "token":
        return None
    name = _NUMPY_NAMES[hlo_name]
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))


def dtype_number(dtype) -> int:
    """The XLA_FFI_DataType number of a numpy dtype."""
    import numpy as np
    name = np.dtype(dtype).name
    for hlo, np_name in _NUMPY_NAMES.items():
        if np_name == name:
            return lib.ccshim_dtype_from_name(hlo.encode(), len(hlo))
    raise TypeError(f"no XLA element type for numpy dtype {name}")


class Leaf(NamedTuple):
    """One buffer of a signature: its element type (HLO name), dims (each a
    size, or a name shared with the other buffers that use it; None for
    `[...]` and `[...n]`, any dims), the layout written after them (HLO's
    minor-to-major order), None if none, and ``leading``: None, or for a
    buffer written with ``...`` the name of the leading dims' product (""
    when unnamed), ``shape`` then holding the trailing dims written after
    them (``f32[...b,m,n]``: leading "b", shape ("m", "n"))."""
    dtype: str
    shape: tuple[int | str, ...] | None
    layout: tuple[int, ...] | None = None
    leading: str | None = None

    def __str__(self) -> str:
        if self.dtype == "token":
            return "token[]"
        dims = [] if self.leading is None else ["..." + self.leading]
        dims += map(str, self.shape or ())
        text = f"{self.dtype}[{','.join(dims)}]"
        if self.layout is not None:
            text += "{" + ",".join(map(str, self.layout)) + "}"
        return text

    @property
    def minor_to_major(self) -> tuple[int, ...]:
        """The layout of the dims written, row-major when none was."""
        if self.layout is not None:
            return self.layout
        return tuple(reversed(range(len(self.shape or ()))))

    def layout_for(self, rank: int) -> tuple[int, ...]:
        """The minor-to-major layout of a buffer of this rank: with leading
        dims, the written layout orders the trailing dims and the leading
        ones are majormost, row-major among themselves (f32[...b,m,n]{0,1}
        at rank 3 is {1,2,0}, jaxlib's batched layout)."""
        lead = rank - len(self.shape or ())
        return tuple(d + lead for d in self.minor_to_major) + tuple(reversed(range(lead)))


class Signature:
    """A custom-call signature in HLO shape syntax, parsed by libccshim.

    >>> s = Signature("(f32[128], f32[2048]) -> f32[2048]")
    >>> s.operands, s.results, s.tuple_result
    """

    def __init__(self, text: str):
        encoded = _args.text("signature", text)
        ptr = ctypes.POINTER(_native.SignatureStruct)()
        _check(lib.ccshim_signature_parse(encoded, ctypes.byref(ptr)), None)
        try:
            sig = ptr.contents
            self.operands = tuple(_leaf(sig.arg_leaves[i].contents)
                                  for i in range(sig.num_arg_leaves))
            self.results = tuple(_leaf(sig.ret_leaves[i].contents)
                                 for i in range(sig.num_ret_leaves))
            result = sig.result.contents
            self.tuple_result = bool(result.is_tuple)
            # Elements of a tuple result, and whether one is itself a tuple.
            self.result_arity = result.num_children if result.is_tuple else None
            self.nested_result = any(result.children[i].is_tuple
                                     for i in range(result.num_children))
            self.has_tuple_operand = bool(sig.has_tuple_operand)
            # Shape polymorphism: named dims ([n,m]) and [...] are checked per call.
            self.is_static = bool(sig.is_static)
            self.dim_names = tuple(sig.dim_names[i].decode() for i in range(sig.num_dim_names))
            self.operand_names = tuple(
                sig.operands[i].name.decode() if sig.operands[i].name else None
                for i in range(sig.num_operands))
            # The canonical text, however long: sized by a first call.
            size = lib.ccshim_signature_format(ptr, None, 0) + 1
            buf = ctypes.create_string_buffer(size)
            lib.ccshim_signature_format(ptr, buf, size)
            self.text = buf.value.decode()
        finally:
            lib.ccshim_signature_free(ptr)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Signature({self.text!r})"


def _leaf(shape: _native.Shape) -> Leaf:
    leading = None
    if shape.any_dims:
        leading = shape.elements_name.decode() if shape.elements_name else ""
        if shape.rank == 0:  # [...], [...n]: any dims
            return Leaf(dtype_name(shape.dtype), None, None, leading)
    dims = tuple(shape.dim_names[i].decode() if shape.dim_names and shape.dim_names[i]
                 else shape.dims[i] for i in range(shape.rank))
    layout = tuple(shape.layout[i] for i in range(shape.rank)) if shape.layout else None
    return Leaf(dtype_name(shape.dtype), dims, layout, leading)


# --- Finding a kernel -------------------------------------------------------

def _python_api(name: str, restype, *argtypes):
    """A function of Python's C API with a prototype of ccshim's own: a new
    function object each, never ``ctypes.pythonapi``'s shared one, whose
    prototype extensions set for themselves (one that sets
    ``PyCapsule_New.argtypes`` and calls it with None finds it as it left
    it).  PYFUNCTYPE: called with the GIL held, Python's errors raised."""
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


_PyCapsule_GetName = _python_api("PyCapsule_GetName", ctypes.c_char_p, ctypes.py_object)
_PyCapsule_GetPointer = _python_api("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object,
                                    ctypes.c_char_p)
_PyCapsule_IsValid = _python_api("PyCapsule_IsValid", ctypes.c_int, ctypes.py_object,
                                 ctypes.c_char_p)
_PyCapsule_New = _python_api("PyCapsule_New", ctypes.py_object, ctypes.c_void_p,
                             ctypes.c_char_p, ctypes.c_void_p)


def pycapsule(fn: Any):
    """An unnamed PyCapsule of a function pointer (a ctypes function or an
    address), with no destructor: what ``jax.ffi.pycapsule`` makes, made
    without touching ``ctypes.pythonapi.PyCapsule_New``'s prototype, which
    jax.ffi.pycapsule rewrites for the whole process."""
    address = fn if isinstance(fn, int) else ctypes.cast(fn, ctypes.c_void_p).value
    if not address:
        raise ValueError("a capsule of a NULL function pointer")
    return _PyCapsule_New(address, None, None)

# The names a custom-call target's capsule carries: jaxlib's and legacy
# extensions' registrations() name theirs "xla._CUSTOM_CALL_TARGET", and
# jax.ffi.pycapsule makes unnamed ones.  A capsule of any other name holds
# something else (a pybind11 function record, a NumPy C API table, ...).
CAPSULE_NAME = "xla._CUSTOM_CALL_TARGET"


def _is_capsule(obj: Any) -> bool:
    return type(obj).__name__ == "PyCapsule"


def resolve_kernel(fn: Any, platform: str = "host") -> int:
    """The address of a legacy kernel given as legacy code already has it:

    * a PyCapsule, as legacy extension modules' ``registrations()`` return;
    * a ctypes function pointer;
    * an integer address;
    * a name: a target the registration macros put in ccshim's legacy
      registry for ``platform``, else a symbol of a library already loaded;
    * a ``(library, symbol)`` pair, the library a path or a ``ctypes.CDLL``.
    """
    if _is_capsule(fn):
        name = _PyCapsule_GetName(fn)
        if name is not None and name != CAPSULE_NAME.encode():
            raise ValueError(
                f"the capsule is named {name.decode(errors='replace')!r}, which is no "
                f"custom-call target's name; accepted: {CAPSULE_NAME!r} (legacy "
                "extensions' registrations()) or no name (jax.ffi.pycapsule)")
        if not _PyCapsule_IsValid(fn, name):
            raise ValueError("the capsule is not valid")
        address = _PyCapsule_GetPointer(fn, name)
        if not address:
            raise ValueError("the capsule holds a NULL pointer, not a kernel")
        return address
    if isinstance(fn, ctypes._CFuncPtr):
        address = ctypes.cast(fn, ctypes.c_void_p).value
        if not address:
            raise ValueError("the ctypes function pointer is NULL")
        return address
    if isinstance(fn, bool):
        raise TypeError("a kernel cannot be a bool")
    if isinstance(fn, int):
        if fn <= 0 or fn >= _args.POINTER_LIMIT:
            raise ValueError(
                f"kernel address {fn:#x} is not a valid address; expected 1.."
                f"{_args.POINTER_LIMIT - 1:#x} (a {8 * ctypes.sizeof(ctypes.c_void_p)}-bit "
                "pointer)")
        return fn
    if isinstance(fn, str):
        _args.text("a kernel's name", fn)
        xla_platform = xla_platform_name(platform)
        address = lib.ccshim_legacy_lookup(fn.encode(), xla_platform.encode())
        if address:
            return address
        address = _native.dlsym_default(fn)
        if address:
            return address
        raise ValueError(
            f"no kernel named {fn!r}: not in ccshim's legacy registry for "
            f"{xla_platform!r} and not a symbol of any loaded library "
            f"(load it with ccshim.load_legacy_library first)")
    if isinstance(fn, tuple) and len(fn) == 2:
        library, symbol = fn
        if not isinstance(library, ctypes.CDLL):
            library = load_legacy_library(library)
        try:
            return ctypes.cast(getattr(library, symbol), ctypes.c_void_p).value
        except AttributeError:
            raise ValueError(f"library {library._name} has no symbol {symbol!r}") from None
    raise TypeError(
        "a kernel is a PyCapsule, a ctypes function pointer, an int address, a "
        f"name or a (library, symbol) pair; got {type(fn).__name__}")


def load_legacy_library(path: str | os.PathLike) -> ctypes.CDLL:
    """Loads a shared library of legacy kernels, or a legacy Python extension
    module's .so, so that its ``XlaCustomCallStatus*`` symbols resolve to
    libccshim (already loaded globally by importing ccshim).  Its
    registration macros, if any, run and fill ccshim's legacy registry.

    A bare file name that names a file in the current folder loads that
    file (as ``ccshim conform`` does); any other bare name is searched for as
    the dynamic loader searches (LD_LIBRARY_PATH, the system folders)."""
    name = os.fspath(path)
    if os.sep not in name and os.path.isfile(name):
        name = os.path.join(os.curdir, name)
    return ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)


def legacy_targets() -> list[tuple[str, str]]:
    """(name, platform) of every target in ccshim's legacy registry."""
    out = []
    for i in range(lib.ccshim_legacy_count()):
        name, platform = ctypes.c_char_p(), ctypes.c_char_p()
        if lib.ccshim_legacy_target(i, ctypes.byref(name), ctypes.byref(platform), None) == 0:
            out.append((name.value.decode(), platform.value.decode()))
    return out


# --- Adapters -----------------------------------------------------------------

def parse_platform(platform: str) -> tuple[str, int]:
    """("host" | "cuda" | "rocm", ccshim_platform) for a spelling (cpu/host,
    gpu/cuda, rocm; any case), by libccshim's own vocabulary
    (ccshim_platform_parse), which the C API and the command use too."""
    if not isinstance(platform, str):
        raise TypeError(f"platform must be str, got {type(platform).__name__}")
    value = ctypes.c_int()
    if lib.ccshim_platform_parse(_args.text("platform", platform), ctypes.byref(value)) != 0:
        raise ValueError(_native.last_error())
    return lib.ccshim_platform_name(value.value).decode(), value.value


def xla_platform_name(platform: str) -> str:
    """"Host", "CUDA" or "ROCM": the legacy registry's key for a platform,
    which jax.ffi.register_ffi_target takes too (ccshim_platform_xla_name)."""
    return lib.ccshim_platform_xla_name(parse_platform(platform)[1]).decode()


def export_platform_name(platform: str) -> str:
    """"cpu", "cuda" or "rocm": jax.export's name for a platform
    (ccshim_platform_export_name)."""
    return lib.ccshim_platform_export_name(parse_platform(platform)[1]).decode()


def answers_as_typed_handler(kernel: int) -> bool:
    """Whether the function at ``kernel`` answers as a typed-FFI handler
    (ccshim_probe_typed_handler: called in a forked child with XLA's metadata
    query; a legacy kernel neither answers it nor reports through the API
    table).  False also for a typed handler that ignores its frame."""
    typed = ctypes.c_int()
    _check(lib.ccshim_probe_typed_handler(kernel, ctypes.byref(typed)), "probe")
    return bool(typed.value)


def legacy_form_name(api_version: int, platform: str) -> str:
    """The form's name as ccshim's tools print it ("CPU v2", "GPU v1", ...)."""
    _, platform_id = parse_platform(platform)
    name = lib.ccshim_legacy_form_name(_args.integer("api_version", api_version, 1, 3),
                                       platform_id)
    return name.decode()


class Adapter:
    """A wrapped legacy kernel.  ``handler`` is the XLA_FFI_Handler* address.

    Adapters registered with XLA must outlive every call; XLA has no
    unregister, so ccshim keeps them for the life of the process."""

    def __init__(self, address: int, kernel: int, api_version: int, platform: str,
                 signature: Signature | None, options: dict):
        self._address = address
        self.kernel = kernel
        self.api_version = api_version
        self.platform = platform
        self.signature = signature
        self.options = options
        self.handler = lib.ccshim_adapter_handler(address)

    def metadata(self) -> tuple[tuple[int, int], int]:
        """((major, minor), traits) as the handler answers XLA's query."""
        md = _native.Metadata()
        _check(lib.ccshim_query_metadata(self.handler, ctypes.byref(md)), "metadata")
        return (md.major, md.minor), md.traits

    def __repr__(self) -> str:
        return (f"Adapter(kernel={self.kernel:#x}, api_version={self.api_version}, "
                f"platform={self.platform!r}, signature={self.signature})")


_TUPLES = {"flat": 0, "nested": 1}
_LAYOUTS = {"refuse": 0, "caller_checks": 1}


class WrapSpec(NamedTuple):
    """Everything wrap() takes but the kernel, checked once (wrap_spec):
    the form, the platform (canonical name, ccshim_platform, and the names
    XLA's registry and jax.devices give it), the parsed signature (or None)
    and the options as they will be used.  Asked of libccshim once, kept
    for the rest of a registration."""
    api_version: int
    platform: str
    platform_id: int
    signature: Signature | None
    options: dict
    xla_platform: str
    export_platform: str


def wrap_spec(api_version: Any, platform: Any = "cpu", signature: Any = None,
              opaque_attr: Any = "opaque", tuple_operands: Any = "flat", traits: Any = 0,
              ffi_version: Any = (0, 1), layouts: Any = "refuse") -> WrapSpec:
    """Validates what wrap() and ccshim.jax.register_legacy() take, each
    argument once.  Raises TypeError or ValueError with the argument's
    name."""
    canonical, platform_id = parse_platform(platform)
    if isinstance(api_version, bool) or not isinstance(api_version, int):
        raise TypeError(f"api_version must be int, got {type(api_version).__name__}")
    if api_version not in (1, 2, 3):
        raise ValueError(
            f"api_version {api_version!r} is not a legacy form; expected 1 "
            "(original), 2 (status returning) or 3 (status returning unified)")
    _args.text("signature", signature, optional=True)
    if _args.text("opaque_attr", opaque_attr) == b"":
        raise ValueError("opaque_attr is empty; expected a name such as 'opaque'")
    _args.choice("tuple_operands", tuple_operands, tuple(_TUPLES))
    _args.choice("layouts", layouts, tuple(_LAYOUTS))
    options = dict(opaque_attr=opaque_attr, tuple_operands=tuple_operands, layouts=layouts,
                   traits=_args.integer("traits", traits, 0, _args.UINT32_MAX),
                   ffi_version=tuple(_args.version_pair("ffi_version", ffi_version)))
    sig = Signature(signature) if signature is not None else None
    return WrapSpec(api_version, canonical, platform_id, sig, options,
                    lib.ccshim_platform_xla_name(platform_id).decode(),
                    lib.ccshim_platform_export_name(platform_id).decode())


def wrap_kernel(kernel: int, spec: WrapSpec) -> Adapter:
    """Wraps the kernel at ``kernel`` (resolve_kernel's address) as ``spec``
    says (ccshim_wrap)."""
    o = spec.options
    opts = _native.WrapOptions()
    opts.opaque_attr = o["opaque_attr"].encode()
    opts.tuple_operands = _TUPLES[o["tuple_operands"]]
    opts.ffi_major, opts.ffi_minor = o["ffi_version"]
    opts.traits = o["traits"]
    opts.layouts = _LAYOUTS[o["layouts"]]
    address = ctypes.c_void_p()
    text = spec.signature.text.encode() if spec.signature is not None else None
    _check(lib.ccshim_wrap(kernel, spec.api_version, spec.platform_id, text, ctypes.byref(opts),
                           ctypes.byref(address)),
           "wrap")
    return Adapter(address.value, kernel, spec.api_version, spec.platform, spec.signature,
                   dict(o))


def wrap(fn: Any, *, api_version: int, platform: str = "cpu",
         signature: str | None = None, opaque_attr: str = "opaque",
         tuple_operands: str = "flat", traits: int = 0,
         ffi_version: tuple[int, int] = (0, 1), layouts: str = "refuse") -> Adapter:
    """Wraps a legacy kernel into a typed-FFI handler (see ccshim_wrap).

    ``layouts``: a signature's layout other than row-major is refused
    (``"refuse"``: the adapter cannot see a buffer's layout) or taken as
    checked by the caller (``"caller_checks"``, what ccshim.jax does)."""
    spec = wrap_spec(api_version, platform, signature, opaque_attr, tuple_operands, traits,
                     ffi_version, layouts)
    return wrap_kernel(resolve_kernel(fn, spec.platform), spec)
