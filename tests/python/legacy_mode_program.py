"""A legacy extension's registration and lowering code, as veros and
mpi4jax wrote theirs, run by tests/python/test_legacy_mode.py in a process
of its own:

    legacy_mode_program.py MODE KERNELS_SO

MODE "xla" runs it on XLA's legacy path; "on" and "strict" with
`import ccshim.legacy` first (CCSHIM_LEGACY=MODE).  Prints one JSON line:
each output's bytes in hex, and the custom calls XLA was given.
"""
import json
import os
import struct
import sys

mode, kernels_so = sys.argv[1], sys.argv[2]
if mode != "xla":
    os.environ["CCSHIM_LEGACY"] = mode
    import ccshim.legacy  # noqa: F401 - the one line

import ctypes

import jax
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import mlir
from jax._src.interpreters.mlir import custom_call
from jax._src.lib.mlir import ir

import ccshim

# --- the "extension": capsules of its kernels, registered as veros does --------
lib = ccshim.load_legacy_library(kernels_so)
_new = ctypes.pythonapi.PyCapsule_New
_new.restype, _new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p,
                                                 ctypes.c_void_p]
cpu_custom_call_targets = {
    name: _new(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value,
               b"xla._CUSTOM_CALL_TARGET", None)
    for name in ("scale_v1", "scale_v2", "scale_v3")}
for name, fn in cpu_custom_call_targets.items():
    jax.ffi.register_ffi_target(f"ext_{name}", fn, platform="cpu", api_version=0)

# --- its lowering: mlir.custom_call with the default api_version (2) ------------
scale_p = Primitive("ext_scale")
scale_p.def_abstract_eval(lambda x: x)
scale_p.def_impl(lambda x: jax.jit(scale_p.bind)(x))


def _lower(ctx, x):
    return custom_call("ext_scale_v2", result_types=[ir.RankedTensorType(x.type)],
                       operands=[x]).results


mlir.register_lowering(scale_p, _lower, platform="cpu")

x = np.linspace(-1, 1, 256, dtype=np.float32)
out = jax.ShapeDtypeStruct((256,), np.float32)
desc = struct.pack("<fi", 3.0, 256)
programs = {
    "v1 via ffi_call": jax.jit(jax.ffi.ffi_call("ext_scale_v1", out, custom_call_api_version=1)),
    "v2 via mlir.custom_call": jax.jit(scale_p.bind),
    "v3 with a descriptor": jax.jit(jax.ffi.ffi_call("ext_scale_v3", out,
                                                     custom_call_api_version=3,
                                                     legacy_backend_config=desc)),
}
report = {"outputs": {}, "targets": {}}
for name, fn in programs.items():
    text = fn.lower(x).compile().as_text()
    report["targets"][name] = sorted({line.split('custom_call_target="')[1].split('"')[0]
                                      for line in text.splitlines()
                                      if 'custom_call_target="' in line})
    report["outputs"][name] = np.asarray(fn(x)).tobytes().hex()
# The extension makes a capsule with its own prototype again, after ccshim
# has registered its targets: the process's shared prototypes are as the
# extension left them (None where it set none).
try:
    _new(ctypes.cast(lib.scale_v1, ctypes.c_void_p).value, b"xla._CUSTOM_CALL_TARGET", None)
    report["capsule_after"] = "made"
except Exception as e:  # noqa: BLE001 - the message is the result
    report["capsule_after"] = f"{type(e).__name__}: {e}"
report["pythonapi"] = {
    name: "unset" if f.argtypes is None else [t.__name__ for t in f.argtypes]
    for name in ("PyCapsule_New", "PyCapsule_GetName", "PyCapsule_GetPointer",
                 "PyCapsule_IsValid") for f in [getattr(ctypes.pythonapi, name)]}
if mode == "strict":  # a target registered before ccshim.legacy: its call is refused
    import ccshim.legacy as cl
    cl.disable()
    jax.ffi.register_ffi_target("ext_late", cpu_custom_call_targets["scale_v1"], platform="cpu",
                                api_version=0)
    cl.enable()
    try:
        jax.jit(jax.ffi.ffi_call("ext_late", out, custom_call_api_version=1))(x)
        report["strict_refused"] = None
    except Exception as e:  # noqa: BLE001 - the message is the result
        report["strict_refused"] = str(e).splitlines()[0]
    # A signature for a target already wrapped, and a malformed one: refused.
    report["signature_refused"] = []
    for target, text in (("ext_scale_v1", "(f32[n]) -> f32[n]"), ("ext_new", "(f32[n) -> f32[n]")):
        try:
            cl.signature(target, text)
            report["signature_refused"].append(None)
        except Exception as e:  # noqa: BLE001 - the message is the result
            report["signature_refused"].append(str(e))
print(json.dumps(report))
