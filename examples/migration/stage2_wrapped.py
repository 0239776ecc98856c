"""Stage 2, every kernel wrapped by ccshim: the same library, unchanged,
registered as typed-FFI handlers and called through typed call sites.
Nothing of the legacy path is left; `ccshim conform` proves each kernel
behaves the same (examples/migration/conform.manifest)."""
import common
from common import X, check

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

import ccshim
import ccshim.jax as cj

lib = ccshim.load_legacy_library(common.LEGACY_LIB)

# Registering: the kernel, its legacy form, and nothing else changes.
cj.register_legacy("rms_norm", (lib, "rms_norm"), platform="cpu", api_version=2)
cj.register_legacy("clip", (lib, "clip"), platform="cpu", api_version=3)
cj.register_legacy("moments", (lib, "moments"), platform="cpu", api_version=1)


# Call sites: operands as before; the opaque becomes an attribute.
def rms_norm(x, eps=1e-5):
    descriptor = common.rms_norm_descriptor(x.shape[0], x.shape[1], eps)
    return cj.legacy_call("rms_norm", jax.ShapeDtypeStruct(x.shape, x.dtype),
                          vmap_method="sequential")(descriptor, x)


def clip(x, lo, hi):
    return cj.legacy_call("clip", jax.ShapeDtypeStruct(x.shape, x.dtype),
                          opaque=common.clip_descriptor(lo, hi, x.size))(x)


def moments(x):
    scalar = jax.ShapeDtypeStruct((), jnp.float32)
    return cj.legacy_call("moments", (scalar, scalar))(jnp.int32(x.size), x)


def sharded_rms_norm(x):
    """Rows split over the devices; each shard's descriptor says its own
    rows, because shard_map traces the body with the local shape."""
    mesh = jax.make_mesh((4,), ("rows",))
    x = jax.device_put(x, NamedSharding(mesh, P("rows")))
    return jax.jit(jax.shard_map(rms_norm, mesh=mesh, in_specs=P("rows"),
                                 out_specs=P("rows")))(x)


def main():
    print("stage 2: every kernel wrapped by ccshim, on the typed FFI")
    common.check_kernels(rms_norm, clip, moments)
    check("rms_norm under vmap (one call per row block)",
          jax.vmap(rms_norm)(np.stack([X, 2 * X])),
          np.stack([common.rms_norm_ref(X, 1e-5), common.rms_norm_ref(2 * X, 1e-5)]))
    out = sharded_rms_norm(X)
    check("rms_norm under shard_map, 4 devices", out, common.rms_norm_ref(X, 1e-5))
    if len(out.sharding.device_set) != 4:
        common.failures.append("shard_map used 4 devices")


if __name__ == "__main__":
    main()
    common.finish("stage 2")
