"""Stage 3, one kernel ported: clip is now a native typed-FFI handler
(ported/clip_ffi.cc) with attributes instead of an opaque descriptor;
rms_norm and moments stay wrapped.  The wrapped legacy clip stays
registered as the reference the port is checked against, here and by
`ccshim conform --against` (conform-ported.manifest).  When the last kernel
is ported, ccshim goes."""
import ctypes

import common
from common import V, check, check_raises

import jax
import numpy as np

import stage2_wrapped as wrapped  # rms_norm and moments, still wrapped

ported = ctypes.CDLL(str(common.PORTED_LIB))

# Registering the port: a typed handler, as XLA_FFI_DEFINE_HANDLER_SYMBOL
# exports it; no ccshim in the path.
jax.ffi.register_ffi_target("clip_ffi", jax.ffi.pycapsule(ported.clip_ffi), platform="cpu")


# The call site: typed attributes instead of packed bytes.
def clip(x, lo, hi):
    return jax.ffi.ffi_call("clip_ffi", jax.ShapeDtypeStruct(x.shape, x.dtype))(
        x, lo=np.float32(lo), hi=np.float32(hi))


if __name__ == "__main__":
    wrapped.main()
    print("stage 3: clip ported to the typed FFI; the others still wrapped")
    native = jax.jit(clip, static_argnums=(1, 2))(V, -1.5, 2.5)
    legacy = jax.jit(wrapped.clip, static_argnums=(1, 2))(V, -1.5, 2.5)
    check("clip (native) against numpy", native, common.clip_ref(V, -1.5, 2.5))
    same = np.asarray(native).tobytes() == np.asarray(legacy).tobytes()
    print(f"  {'ok  ' if same else 'FAIL'} clip (native) byte for byte against the wrapped legacy clip")
    if not same:
        common.failures.append("native clip == legacy clip")
    check_raises("clip (native) refuses lo > hi", lambda: clip(V, 2.5, -1.5).block_until_ready(),
                 "clip: lo (2.5) must not exceed hi (-1.5)")
    common.finish("stage 3")
