"""One process of tests/python/test_distributed.py: two of these form a
jax.distributed program on this machine (CPU collectives over gloo), each
with two host devices.  Each registers a ccshim-wrapped legacy kernel before
its first compile, then runs a shard_map over all four devices whose blocks
call the kernel and are summed across processes with psum.

    distributed_worker.py PROCESS_ID COORDINATOR_PORT KERNELS_LIB
"""
import os
import struct
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

process_id, port, kernels_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2,
                           process_id=process_id, initialization_timeout=60)

import ccshim  # noqa: E402
import ccshim.jax as cj  # noqa: E402

kernels = ccshim.load_legacy_library(kernels_path)
# Before the first compile, under the same name in every process (executables
# look their targets up by name).
cj.register_legacy("dist_scale", (kernels, "scale_v3"), api_version=3,
                   signature="(f32[256]) -> f32[256]")

assert jax.process_count() == 2 and len(jax.devices()) == 4, jax.devices()
mesh = jax.make_mesh((4,), ("x",))
full = np.sin(np.arange(4 * 256, dtype=np.float32))
x = jax.make_array_from_callback(full.shape, NamedSharding(mesh, P("x")),
                                 lambda index: full[index])


def local(block):
    scaled = cj.legacy_call("dist_scale", jax.ShapeDtypeStruct(block.shape, block.dtype),
                            opaque=struct.pack("fi", 0.5, block.size))(block)
    return jax.lax.psum(scaled, "x")


total = jax.jit(jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P()))(x)
got = np.asarray(total.addressable_data(0))
want = (np.float32(0.5) * full.reshape(4, 256)).sum(axis=0, dtype=np.float32)
if not np.allclose(got, want, rtol=1e-6, atol=1e-6):
    print(f"process {process_id}: wrong sum, max error {np.abs(got - want).max()}")
    sys.exit(1)
print(f"process {process_id}: ok, {jax.process_count()} processes, {len(jax.devices())} "
      f"devices, sum of {total.shape} checked")
jax.distributed.shutdown()
