"""Stage 1, the codebase as it was: legacy kernels registered with XLA's
legacy registry and called through legacy call sites.  JAX still runs
this, with deprecation warnings; XLA logs that legacy support is going.
Nothing here uses ccshim, except that libccshim supplies the status
functions the kernels call, which jaxlib never exported."""
import ctypes
import warnings

import common

import jax
import jax.numpy as jnp

warnings.simplefilter("ignore", DeprecationWarning)
ctypes.CDLL(common.os.environ["CCSHIM_LIBRARY"], mode=ctypes.RTLD_GLOBAL)
lib = ctypes.CDLL(str(common.LEGACY_LIB))

# Registering: each kernel into XLA's legacy registry (api_version=0).
for name in ("rms_norm", "clip", "moments"):
    jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(lib, name)),
                                platform="cpu", api_version=0)


# Call sites: the legacy calling convention and the opaque backend config.
def rms_norm(x, eps=1e-5):
    descriptor = common.rms_norm_descriptor(x.shape[0], x.shape[1], eps)
    return jax.ffi.ffi_call("rms_norm", jax.ShapeDtypeStruct(x.shape, x.dtype),
                            custom_call_api_version=2)(descriptor, x)


def clip(x, lo, hi):
    return jax.ffi.ffi_call("clip", jax.ShapeDtypeStruct(x.shape, x.dtype),
                            custom_call_api_version=3,
                            legacy_backend_config=common.clip_descriptor(lo, hi, x.size))(x)


def moments(x):
    scalar = jax.ShapeDtypeStruct((), jnp.float32)
    return jax.ffi.ffi_call("moments", (scalar, scalar), custom_call_api_version=1)(
        jnp.int32(x.size), x)


if __name__ == "__main__":
    print("stage 1: legacy kernels on XLA's legacy path")
    common.check_kernels(rms_norm, clip, moments)
    common.finish("stage 1")
