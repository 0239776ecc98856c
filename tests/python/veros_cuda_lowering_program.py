"""veros 1.7.0's tridiagonal solver (veros.core.special.tdma_, as a build of
it has it) lowered for cuda on a machine with no GPU, as veros's solvers
call it on a GPU; run by tests/python/test_port_gpu.py in a process of its
own, once with the legacy build and once with the ported one:

    veros_cuda_lowering_program.py VEROS_BUILD_DIR

Prints one JSON line: whether ccshim could be imported, and per dtype the
custom calls of the lowered module (lowered_calls.py: target, API version,
opaque bytes, operand and result layouts).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # beside this file
from lowered_calls import ccshim_state, module_calls  # noqa: E402
from project_modules import load_package_module  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)
tdma_ = load_package_module(sys.argv[1], "veros.core.special.tdma_")
report = {"ccshim": ccshim_state(), "gpu_ext": tdma_.HAS_GPU_EXT, "calls": {}}
for dtype in (np.float64, np.float32):
    shape = (6, 5, 16)
    a = jax.ShapeDtypeStruct(shape, dtype)
    mask = jax.ShapeDtypeStruct(shape, np.bool_)
    solve = jax.jit(lambda *args: tdma_.tdma(*args, device="gpu"))
    lowered = solve.trace(a, a, a, a, mask, mask).lower(lowering_platforms=("cuda",))
    report["calls"][np.dtype(dtype).name] = module_calls(lowered.compiler_ir("stablehlo"),
                                                         "tdma_")
print(json.dumps(report))
