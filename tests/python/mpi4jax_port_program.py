"""mpi4jax's CPU bridge as `ccshim port` built it (argv[1]: the built tree):
its capsules registered as typed FFI targets (api_version=1, as the ported
xla_bridge/__init__.py does), then mpi_allreduce (SUM over one rank) and
mpi_barrier called through jax.ffi.ffi_call, with the operands its CPU
lowering passes.  mpi4jax's own Python is not imported (0.8.1 needs
jax.core.get_aval, gone since JAX 0.10).  Prints JSON."""
import json
import sys

import jax
import numpy as np
from mpi4py import MPI

jax.config.update("jax_enable_x64", True)   # 64-bit handles, as mpi4jax does

sys.path.insert(0, sys.argv[1])
from project_modules import load_package_module  # noqa: E402

bridge = load_package_module(sys.argv[1], "mpi4jax._src.xla_bridge.mpi_xla_bridge_cpu")
for name, fn in bridge.custom_call_targets.items():
    jax.ffi.register_ffi_target(name, fn, platform="cpu")    # typed: XLA asks its metadata

comm = MPI.COMM_WORLD.Clone()
handle = lambda obj: np.uintp(MPI._handleof(obj))  # noqa: E731
x = np.arange(5.0)
# The CPU lowering's results are the array and a token: `out` is a table.
two = (jax.ShapeDtypeStruct(x.shape, x.dtype), jax.ShapeDtypeStruct((1,), np.uint8))
total, _ = jax.jit(lambda v: jax.ffi.ffi_call("mpi_allreduce", two, has_side_effect=True)(
    np.intc(x.size), v, handle(MPI.SUM), handle(comm), handle(MPI.DOUBLE)))(x)
jax.block_until_ready(jax.ffi.ffi_call("mpi_barrier", two, has_side_effect=True)(handle(comm)))
print(json.dumps({"jax": jax.__version__, "targets": sorted(bridge.custom_call_targets),
                  "allreduce": np.asarray(total).tolist()}))
