"""mpi4jax 0.8.1.post2's kept port (dev/census/ports/), its GPU path lowered
for cuda on a machine with no GPU, in a Python where ccshim cannot be
imported; run by tests/python/test_port_mpi4jax.py:

    python port_gpu_lowering_program.py SITE

SITE holds the ported tree built by its own build, its CUDA bridge among
it.  Each collective of mpi4jax_collectives.py is lowered for cuda as JAX
lowers it for XLA.  Prints one JSON line: whether ccshim could be imported,
and per collective its custom calls (target, API version, the opaque bytes
in hex: the `opaque` attribute of a typed call, the backend_config of a
legacy one), for the test to set beside the legacy build's
(gpu_lowering_program.py).
"""
import json
import os
import sys

sys.path.insert(0, sys.argv[1])
sys.path.insert(1, os.path.dirname(os.path.abspath(__file__)))  # mpi4jax_collectives
os.environ.setdefault("MPI4JAX_USE_CUDA_MPI", "0")  # no CUDA-aware MPI: say so, quietly

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax._src.lib.mlir import ir  # noqa: E402 - read as XLA would
from mpi4py import MPI  # noqa: E402

import mpi4jax  # noqa: E402
import mpi4jax_collectives  # noqa: E402

try:
    import ccshim  # noqa: F401
    CCSHIM = "importable"
except ImportError as e:
    CCSHIM = f"{type(e).__name__}: {e}"


def _ops(op):
    """Every operation nested in op."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner
                yield from _ops(inner.operation)


def _call(op) -> list:
    attrs = op.attributes
    target = ir.StringAttr(attrs["call_target_name"]).value
    if "mhlo.backend_config" in attrs and isinstance(attrs["mhlo.backend_config"], ir.DictAttr):
        # typed (JAX writes API version 4 so: XLA's HLO says API_VERSION_TYPED_FFI)
        attr = ir.DictAttr(attrs["mhlo.backend_config"])
        opaque = bytes(np.asarray(ir.DenseIntElementsAttr(attr["opaque"]), dtype=np.uint8)) \
            if "opaque" in attr else b""
        return [target, 4, opaque.hex()]
    version = ir.IntegerAttr(attrs["api_version"]).value if "api_version" in attrs else 1
    config = attrs["backend_config"] if "backend_config" in attrs else None
    opaque = ir.StringAttr(config).value_bytes if config is not None else b""
    return [target, version, opaque.hex()]


report = {"ccshim": CCSHIM, "cuda_ext": mpi4jax.has_cuda_support(), "collectives": {}}
for name, fn in mpi4jax_collectives.collectives(mpi4jax, MPI).items():
    lowered = jax.jit(fn).trace(mpi4jax_collectives.ROW).lower(lowering_platforms=("cuda",))
    module = lowered.compiler_ir("stablehlo")
    report["collectives"][name] = [
        _call(op.operation) for op in _ops(module.operation)
        if op.operation.name == "stablehlo.custom_call" and
        ir.StringAttr(op.operation.attributes["call_target_name"]).value.startswith("mpi_")]
print(json.dumps(report))
