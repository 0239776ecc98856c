"""ccshim's embedded typed runtime, from Python: run any typed-FFI handler on
numpy arrays with no XLA, attributes converted from Python values the way
``jax.ffi.ffi_call`` converts its keyword arguments:

=================  =========================
Python value       FFI attribute
=================  =========================
bool               SCALAR pred
int                SCALAR s64
float              SCALAR f64
str, bytes         STRING (every byte kept)
numpy scalar       SCALAR of its dtype
numpy array        ARRAY of its dtype
dict               DICTIONARY (recursively)
=================  =========================

The same handler, the same operands and the same attributes can so be run in
jaxlib and here, and the results compared.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _args
from ._core import CcshimError, _check, dtype_number
from ._native import ContextOptions, lib

INSTANTIATE, PREPARE, INITIALIZE, EXECUTE, RECORD = range(5)

__all__ = ["Context", "call", "invoke_at", "HandlerError", "INSTANTIATE", "EXECUTE"]


class HandlerError(RuntimeError):
    """A handler returned an error: ``code`` ("INTERNAL", ...) and message."""

    def __init__(self, code: str, message: str, number: int = 0):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.number = number  # the XLA_FFI_Error_Code


class Context:
    """An invoke context: one call site (State set at instantiate is read at
    execute through the same context)."""

    _ptr = None  # so that close() and __del__ are quiet when __init__ failed

    def __init__(self, platform: str = "cpu", num_threads: int = 0):
        opts = ContextOptions()
        opts.platform = _args.text("platform", platform)
        opts.num_threads = _args.integer("num_threads", num_threads, 0, _args.INT_MAX)
        ptr = ctypes.c_void_p()
        _check(lib.ccshim_context_new(ctypes.byref(opts), ctypes.byref(ptr)), "context")
        self._ptr = ptr

    def close(self) -> None:
        if self._ptr:
            lib.ccshim_context_free(self._ptr)
            self._ptr = None

    def __del__(self):
        self.close()


def _add_attr(fb, name: str, value: Any, keep: list) -> None:
    key = _args.text("an attribute's name", name)
    if isinstance(value, dict):
        _check(lib.ccshim_frame_builder_begin_dict(fb, key), f"attribute {name}")
        for k, v in value.items():
            _add_attr(fb, k, v, keep)
        _check(lib.ccshim_frame_builder_end_dict(fb), f"attribute {name}")
        return
    if isinstance(value, (str, bytes)):
        data = value.encode() if isinstance(value, str) else value
        _check(lib.ccshim_frame_builder_add_string(fb, key, data, len(data)),
               f"attribute {name}")
        return
    if isinstance(value, np.ndarray) and value.ndim > 0:
        array = np.ascontiguousarray(value)
        keep.append(array)
        _check(lib.ccshim_frame_builder_add_array(
            fb, key, dtype_number(array.dtype), array.ctypes.data, array.size),
            f"attribute {name}")
        return
    if isinstance(value, bool):
        scalar = np.array(value, np.bool_)
    elif isinstance(value, int):
        scalar = np.array(value, np.int64)
    elif isinstance(value, float):
        scalar = np.array(value, np.float64)
    elif isinstance(value, (np.generic, np.ndarray)):
        scalar = np.array(value)
    else:
        raise TypeError(f"attribute {name}: no FFI attribute for a {type(value).__name__}")
    keep.append(scalar)
    _check(lib.ccshim_frame_builder_add_scalar(fb, key, dtype_number(scalar.dtype),
                                               scalar.ctypes.data),
           f"attribute {name}")


def _add_buffer(fb, add, dtype: int, data: int | None, shape: Sequence[int]) -> None:
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    _check(add(fb, dtype, data or None, len(shape), dims), "buffer")


def invoke_at(handler: int, args: Sequence[tuple[int, int | None, Sequence[int]]],
              rets: Sequence[tuple[int, int | None, Sequence[int]]], attrs: dict | None = None,
              *, context: Context | None = None, stage: int = EXECUTE) -> None:
    """Invokes ``handler`` on buffers that are already somewhere: each
    operand and result is (XLA_FFI_DataType number, address or None, dims).
    A handler error raises :class:`HandlerError`."""
    own = context is None
    ctx = Context() if own else context
    fb = ctypes.c_void_p()
    _check(lib.ccshim_frame_builder_new(ctypes.byref(fb)), "frame")
    keep: list = []
    try:
        for dtype, data, shape in args:
            _add_buffer(fb, lib.ccshim_frame_builder_add_arg, dtype, data, shape)
        for dtype, data, shape in rets:
            _add_buffer(fb, lib.ccshim_frame_builder_add_ret, dtype, data, shape)
        for name, value in sorted((attrs or {}).items()):
            _add_attr(fb, name, value, keep)
        err = ctypes.c_void_p()
        status = lib.ccshim_invoke_handler(handler, ctx._ptr, stage, fb, ctypes.byref(err))
        if err.value:
            number = lib.ccshim_error_code(err)
            message = lib.ccshim_error_message(err).decode(errors="replace")
            lib.ccshim_error_free(err)
            raise HandlerError(lib.ccshim_error_code_name(number).decode(), message, number)
        if status != 0:
            raise CcshimError(status, "invoke: " + lib.ccshim_last_error().decode())
    finally:
        lib.ccshim_frame_builder_free(fb)
        if own:
            ctx.close()


def _at(array: np.ndarray) -> tuple[int, int | None, tuple[int, ...]]:
    return dtype_number(array.dtype), array.ctypes.data if array.size else None, array.shape


def call(handler: int, operands: Sequence[np.ndarray], result_shape_dtypes: Any,
         attrs: dict | None = None, *, context: Context | None = None,
         stage: int = EXECUTE):
    """Invokes ``handler`` (an XLA_FFI_Handler* address) at ``stage`` and
    returns the results as numpy arrays, one or a list as
    ``result_shape_dtypes`` is one or a sequence.  A handler error raises
    :class:`HandlerError`."""
    multiple = isinstance(result_shape_dtypes, Sequence)
    results = list(result_shape_dtypes) if multiple else [result_shape_dtypes]
    for i, r in enumerate(results):
        if not (hasattr(r, "shape") and hasattr(r, "dtype")):
            raise TypeError(
                f"result_shape_dtypes{f'[{i}]' if multiple else ''} is "
                f"{type(r).__name__} ({r!r}); expected something with .shape and .dtype "
                "(a jax.ShapeDtypeStruct or an array), or a sequence of them")
    ins = [np.ascontiguousarray(x) for x in operands]
    outs = [np.zeros(r.shape, r.dtype) for r in results]
    invoke_at(handler, [_at(x) for x in ins], [_at(o) for o in outs], attrs, context=context,
              stage=stage)
    return outs if multiple else outs[0]
