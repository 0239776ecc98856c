"""A small legacy JAX extension, as projects wrote theirs before the typed
FFI (kepler_jax's and mpi4jax's shape): its kernel (kernels.c, built into
libmy_legacy_kernels.so beside this file) registered with
``xla_client.register_custom_call_target``, and a primitive lowered to a
custom call of API version 2 with ``jaxlib.hlo_helpers.custom_call``.

Nothing here knows ccshim.  Today's JAX has none of those names, so this
imports only under zero-change mode (``ccshim legacy -- ...``), which puts
them back and runs the call through ccshim's adapter.
"""
import ctypes
import pathlib

import jax
import jax.numpy as jnp
from jax import core
from jax.interpreters import mlir
from jax.interpreters.mlir import ir
from jax.lib import xla_client
from jaxlib.hlo_helpers import custom_call

_lib = ctypes.CDLL(str(pathlib.Path(__file__).with_name("libmy_legacy_kernels.so")))
# A prototype of its own, so that ctypes.pythonapi's shared one is untouched;
# the capsule keeps a pointer to its name, which must live as long as it.
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))
_CAPSULE_NAME = b"xla._CUSTOM_CALL_TARGET"
xla_client.register_custom_call_target(
    b"my_affine",
    _capsule_new(ctypes.cast(_lib.affine_v2, ctypes.c_void_p).value, _CAPSULE_NAME, None),
    platform="cpu")

affine_p = core.Primitive("my_affine")
affine_p.def_impl(lambda x: jax.jit(affine_p.bind)(x))
affine_p.def_abstract_eval(lambda x: core.ShapedArray(x.shape, x.dtype))


def _lowering(ctx, x):
    return custom_call("my_affine", result_types=[ir.RankedTensorType(x.type)],
                       operands=[x], api_version=2).results


mlir.register_lowering(affine_p, _lowering, platform="cpu")


def affine(x):
    """2 * x + 1 over f32[256], by the legacy kernel."""
    return affine_p.bind(jnp.asarray(x, jnp.float32))
