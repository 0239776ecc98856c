"""ctypes declarations of libccshim's C API (ccshim/ccshim.h and friends).

The library is loaded once, with RTLD_GLOBAL, so that legacy kernel
libraries loaded afterwards find XlaCustomCallStatusSetSuccess/SetFailure in
it: jaxlib exports no setters of its own.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import pathlib

c_void_p = ctypes.c_void_p
c_char_p = ctypes.c_char_p
c_int = ctypes.c_int
c_size_t = ctypes.c_size_t
c_int64 = ctypes.c_int64
c_uint32 = ctypes.c_uint32

from . import _carried

_HERE = pathlib.Path(__file__).resolve().parent


def _candidates():
    # The one ccshim legacy's command loaded, where this Python is one it
    # started (carried on PYTHONPATH: ccshim/_carried.py).
    carried = _carried.read().get("library")
    if carried:
        yield pathlib.Path(carried)
    # Its own: the library a wheel installed beside these modules.
    yield _HERE / "lib" / "libccshim.so"
    env = os.environ.get("CCSHIM_LIBRARY")
    if env:
        yield pathlib.Path(env)
    # A source checkout: python/ccshim -> the CMake build directory.
    root = _HERE.parent.parent
    for build in ("build", "build-release"):
        yield root / build / "libccshim.so"
    found = ctypes.util.find_library("ccshim")
    if found:
        yield pathlib.Path(found)


def _load() -> ctypes.CDLL:
    tried = []
    for path in _candidates():
        tried.append(str(path))
        if path.is_absolute() and not path.exists():
            continue
        try:
            return ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
        except OSError:
            continue
    raise ImportError(
        "ccshim: libccshim.so not found; install ccshim with pip, build it (make "
        "build), or set CCSHIM_LIBRARY. Looked in: " + ", ".join(tried))


def library_path() -> str:
    """The file libccshim was loaded from."""
    return lib._name



lib = _load()


class _Versioned(ctypes.Structure):
    """A versioned options struct (base.h): struct_size, first, is set on
    construction to CCSHIM_STRUCT_SIZE(type, last field), as the C INIT macros
    set it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.struct_size = self.struct_size_of_this_version()

    @classmethod
    def struct_size_of_this_version(cls) -> int:
        last = getattr(cls, cls._fields_[-1][0])
        return last.offset + last.size


class WrapOptions(_Versioned):
    """ccshim_wrap_options."""
    _fields_ = [
        ("struct_size", c_size_t),
        ("opaque_attr", c_char_p),
        ("tuple_operands", c_int),
        ("ffi_major", c_int),
        ("ffi_minor", c_int),
        ("traits", c_uint32),
        ("entry", c_int),
        ("allow_wx", c_int),
        ("layouts", c_int),
    ]


class Shape(ctypes.Structure):
    """ccshim_shape."""


Shape._fields_ = [
    ("is_tuple", c_int),
    ("dtype", c_int),
    ("rank", c_int64),
    ("dims", ctypes.POINTER(c_int64)),
    ("num_children", c_size_t),
    ("children", ctypes.POINTER(Shape)),
    ("num_leaves", c_size_t),
    ("first_leaf", c_size_t),
    ("layout", ctypes.POINTER(c_int64)),
    ("dim_names", ctypes.POINTER(c_char_p)),
    ("any_dims", c_int),
    ("name", c_char_p),
    ("elements_name", c_char_p),
]


class SignatureStruct(ctypes.Structure):
    """ccshim_signature."""
    _fields_ = [
        ("num_operands", c_size_t),
        ("operands", ctypes.POINTER(Shape)),
        ("result", ctypes.POINTER(Shape)),
        ("num_arg_leaves", c_size_t),
        ("arg_leaves", ctypes.POINTER(ctypes.POINTER(Shape))),
        ("num_ret_leaves", c_size_t),
        ("ret_leaves", ctypes.POINTER(ctypes.POINTER(Shape))),
        ("has_tuple_operand", c_int),
        ("num_dim_names", c_size_t),
        ("dim_names", ctypes.POINTER(c_char_p)),
        ("dim_operands", ctypes.POINTER(ctypes.c_int32)),
        ("is_static", c_int),
        ("dim_elements", ctypes.POINTER(c_int64)),
    ]


class ContextOptions(_Versioned):
    """ccshim_context_options."""
    _fields_ = [
        ("struct_size", c_size_t),
        ("platform", c_char_p),
        ("stream", c_void_p),
        ("device_ordinal", ctypes.c_int32),
        ("run_id", c_int64),
        ("num_threads", c_int),
        ("alloc", c_void_p),
        ("free", c_void_p),
        ("alloc_user", c_void_p),
    ]


class Metadata(ctypes.Structure):
    """XLA_FFI_Metadata (the parts ccshim_query_metadata fills)."""
    _fields_ = [
        ("struct_size", c_size_t),
        ("version_struct_size", c_size_t),
        ("version_extension_start", c_void_p),
        ("major", c_int),
        ("minor", c_int),
        ("traits", c_uint32),
        ("state_type_id", c_int64),
    ]


class LegacyCall(ctypes.Structure):
    """ccshim_legacy_call."""
    _fields_ = [
        ("fn", c_void_p),
        ("api_version", c_int),
        ("platform", c_int),
        ("signature", ctypes.POINTER(SignatureStruct)),
        ("tuple_operands", c_int),
        ("args", ctypes.POINTER(c_void_p)),
        ("num_args", c_size_t),
        ("rets", ctypes.POINTER(c_void_p)),
        ("num_rets", c_size_t),
        ("opaque", c_void_p),
        ("opaque_len", c_size_t),
        ("stream", c_void_p),
    ]


class LegacyOutcome(ctypes.Structure):
    """ccshim_legacy_outcome."""
    _fields_ = [
        ("failed", c_int),
        ("code", c_int),
        ("message", c_void_p),
        ("message_len", c_size_t),
    ]


def _declare(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


_declare("ccshim_version", c_char_p)
_declare("ccshim_last_error", c_char_p)
_declare("ccshim_status_name", c_char_p, c_int)
_declare("ccshim_dtype_name", c_char_p, c_int)
_declare("ccshim_dtype_from_name", c_int, c_char_p, c_size_t)
_declare("ccshim_platform_parse", c_int, c_char_p, ctypes.POINTER(c_int))
_declare("ccshim_platform_name", c_char_p, c_int)
_declare("ccshim_platform_xla_name", c_char_p, c_int)
_declare("ccshim_platform_export_name", c_char_p, c_int)
_declare("ccshim_legacy_form_name", c_char_p, c_int, c_int)
_declare("ccshim_signature_parse", c_int, c_char_p, ctypes.POINTER(ctypes.POINTER(SignatureStruct)))
_declare("ccshim_signature_free", None, ctypes.POINTER(SignatureStruct))
_declare("ccshim_signature_format", c_size_t, ctypes.POINTER(SignatureStruct), c_char_p, c_size_t)
_declare("ccshim_wrap", c_int, c_void_p, c_int, c_int, c_char_p, ctypes.POINTER(WrapOptions),
         ctypes.POINTER(c_void_p))
_declare("ccshim_adapter_handler", c_void_p, c_void_p)
_declare("ccshim_adapter_free", c_int, c_void_p)
_declare("ccshim_adapter_entry", c_int, c_void_p)
_declare("ccshim_legacy_lookup", c_void_p, c_char_p, c_char_p)
_declare("ccshim_legacy_count", c_size_t)
_declare("ccshim_legacy_target", c_int, c_size_t, ctypes.POINTER(c_char_p),
         ctypes.POINTER(c_char_p), ctypes.POINTER(c_void_p))
_declare("ccshim_query_metadata", c_int, c_void_p, ctypes.POINTER(Metadata))
_declare("ccshim_probe_typed_handler", c_int, c_void_p, ctypes.POINTER(c_int))
_declare("ccshim_ffi_api", c_void_p)
_declare("ccshim_context_new", c_int, ctypes.POINTER(ContextOptions), ctypes.POINTER(c_void_p))
_declare("ccshim_context_free", None, c_void_p)
_declare("ccshim_frame_builder_new", c_int, ctypes.POINTER(c_void_p))
_declare("ccshim_frame_builder_free", None, c_void_p)
_declare("ccshim_frame_builder_add_arg", c_int, c_void_p, c_int, c_void_p, c_int64,
         ctypes.POINTER(c_int64))
_declare("ccshim_frame_builder_add_ret", c_int, c_void_p, c_int, c_void_p, c_int64,
         ctypes.POINTER(c_int64))
_declare("ccshim_frame_builder_add_string", c_int, c_void_p, c_char_p, c_char_p, c_size_t)
_declare("ccshim_frame_builder_add_scalar", c_int, c_void_p, c_char_p, c_int, c_void_p)
_declare("ccshim_frame_builder_add_array", c_int, c_void_p, c_char_p, c_int, c_void_p, c_size_t)
_declare("ccshim_frame_builder_begin_dict", c_int, c_void_p, c_char_p)
_declare("ccshim_frame_builder_end_dict", c_int, c_void_p)
_declare("ccshim_invoke_handler", c_int, c_void_p, c_void_p, c_int, c_void_p,
         ctypes.POINTER(c_void_p))
_declare("ccshim_error_code", c_int, c_void_p)
_declare("ccshim_error_message", c_char_p, c_void_p)
_declare("ccshim_error_free", None, c_void_p)
_declare("ccshim_error_code_name", c_char_p, c_int)
_declare("ccshim_legacy_invoke", c_int, ctypes.POINTER(LegacyCall), ctypes.POINTER(LegacyOutcome))
_declare("ccshim_legacy_outcome_reset", None, ctypes.POINTER(LegacyOutcome))

# libc's dlsym, for symbol names in libraries already loaded.
_libc = ctypes.CDLL(None)
_libc.dlsym.restype = c_void_p
_libc.dlsym.argtypes = [c_void_p, c_char_p]
RTLD_DEFAULT = c_void_p(0)


def dlsym_default(name: str) -> int:
    return _libc.dlsym(RTLD_DEFAULT, name.encode()) or 0


def last_error() -> str:
    return lib.ccshim_last_error().decode(errors="replace")


def status_name(status: int) -> str:
    return lib.ccshim_status_name(status).decode()
