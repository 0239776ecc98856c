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
from mpi4py import MPI  # noqa: E402

import mpi4jax  # noqa: E402
import mpi4jax_collectives  # noqa: E402
from lowered_calls import ccshim_state, module_calls  # noqa: E402


report = {"ccshim": ccshim_state(), "cuda_ext": mpi4jax.has_cuda_support(), "collectives": {}}
for name, fn in mpi4jax_collectives.collectives(mpi4jax, MPI).items():
    lowered = jax.jit(fn).trace(mpi4jax_collectives.ROW).lower(lowering_platforms=("cuda",))
    report["collectives"][name] = [
        [c["target"], c["version"], c["opaque"]]
        for c in module_calls(lowered.compiler_ir("stablehlo"), "mpi_")]
print(json.dumps(report))
