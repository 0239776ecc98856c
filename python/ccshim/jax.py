"""Legacy XLA custom calls in JAX, through ccshim, as typed-FFI calls.

Before (deprecated in JAX, going away in XLA)::

    jax.ffi.register_ffi_target("my_kernel", capsule, platform="cpu", api_version=0)
    y = jax.ffi.ffi_call("my_kernel", out_type, custom_call_api_version=2,
                         legacy_backend_config=descriptor)(x)

With ccshim, the same kernel, untouched::

    import ccshim.jax as cj
    cj.register_legacy("my_kernel", capsule, platform="cpu", api_version=2,
                       signature="(f32[1024]) -> f32[1024]")
    y = cj.legacy_call("my_kernel", out_type, opaque=descriptor)(x)

``legacy_call`` works under ``jit``, ``vmap`` (``vmap_method`` as in
``jax.ffi.ffi_call``, plus ccshim's ``"broadcast"``) and inside
``shard_map``.  The opaque bytes travel as a uint8 array attribute, so binary
descriptors with NUL bytes arrive intact.
"""

from ._jax_call import legacy_call, xla_legacy_call
from ._jax_register import Registered, register_legacy, register_xla_legacy, registered

__all__ = ["register_legacy", "legacy_call", "registered", "register_xla_legacy",
           "xla_legacy_call", "Registered"]
