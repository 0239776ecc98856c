"""mpi4jax 0.8.1.post2's GPU path, lowered for cuda on a machine with no GPU,
run by tests/python/test_gpu_lowerings.py in zero-change mode:

    python -m ccshim.legacy gpu_lowering_program.py MPI4JAX_BUILD

mpi4jax is imported whole, as its users import it, from its build in the
per-user cache (dev/setup.sh builds its CUDA bridge wherever nvcc is), so
its CUDA bridge registers its kernels for CUDA and zero-change mode records
them.  Each collective is then exported with ``platforms=("cuda",)`` (JAX
lowers for a platform it has no device of) and rewritten by ccshim.  Prints
one JSON line: per collective, its custom calls before and after the
rewrite (target, api_version, opaque bytes in hex), the typed targets the
rewritten artifact needs on cuda; and per legacy target, the address of
the kernel zero-change mode recorded for cuda and of the CUDA bridge's own.
"""
import json
import os
import sys

build = sys.argv[1]
sys.path.insert(0, build)
sys.path.insert(1, os.path.dirname(os.path.abspath(__file__)))  # mpi4jax_collectives
os.environ.setdefault("MPI4JAX_USE_CUDA_MPI", "0")  # no CUDA-aware MPI: say so, quietly

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax import export  # noqa: E402
from mpi4py import MPI  # noqa: E402

import mpi4jax  # noqa: E402
from mpi4jax._src.xla_bridge import mpi_xla_bridge_cuda as bridge  # noqa: E402

import ccshim  # noqa: E402
import ccshim.export as ce  # noqa: E402
import ccshim.legacy as cl  # noqa: E402
from ccshim import _hlo  # noqa: E402
import mpi4jax_collectives  # noqa: E402 - beside this file

ROW = mpi4jax_collectives.ROW
COLLECTIVES = mpi4jax_collectives.collectives(mpi4jax, MPI)
UNSTABLE = [export.DisabledSafetyCheck.custom_call(name)
            for name in bridge.custom_call_targets]


def _opaque(op, typed):
    ir = jax._src.lib.mlir.ir  # noqa: SLF001 - the test reads the attribute as XLA would
    config = op.attributes["backend_config"]
    if not typed:
        return _hlo.string(config).hex()
    attrs = ir.DictAttr(config)
    if "opaque" not in attrs:
        return ""
    return bytes(np.asarray(ir.DenseIntElementsAttr(attrs["opaque"]), dtype=np.uint8)).hex()


def _calls(data, typed):
    art = ce.read(data, platform="cuda")
    with art.context:
        return [[c.target, c.api_version, _opaque(op, typed)]
                for op, c in art.custom_calls() if c.kind in ("legacy", "ccshim")]


report = {"cuda_ext": mpi4jax.has_cuda_support(), "collectives": {}}
for name, fn in COLLECTIVES.items():
    exp = export.export(jax.jit(fn), platforms=("cuda",), disabled_checks=UNSTABLE)(ROW)
    # Its module, as XLA would compile it (mpi4jax's ordered effect has no
    # serialized form: jax.export cannot write the whole artifact).
    module = exp.mlir_module_serialized
    done = ce.rewrite(module, platform="cuda")
    report["collectives"][name] = {
        "platforms": list(exp.platforms),
        "legacy": _calls(module, typed=False),
        "rewritten": _calls(done.data, typed=True),
        "needed": [[t["typed"], t["legacy"], t["api_version"], t["platforms"]]
                   for t in ce.needed(done.data, platform="cuda")],
    }
recorded = {name: ccshim.resolve_kernel(fn) for (platform, name), fn in cl.recorded().items()
            if platform == "cuda"}
report["recorded_cuda"] = {k: hex(v) for k, v in sorted(recorded.items())}
report["bridge"] = {k: hex(ccshim.resolve_kernel(v))
                    for k, v in sorted(bridge.custom_call_targets.items())}
print(json.dumps(report))
