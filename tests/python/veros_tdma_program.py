"""veros 1.7.0's own tridiagonal solver (veros.core.special.tdma_, its
registration and lowering unchanged; its Cython kernels as its setup.py
builds them), called as veros's solvers call it, run by
tests/python/test_legacy_mode.py in a process of its own:

    veros_tdma_program.py MODE VEROS_BUILD_DIR

MODE "xla": on XLA's legacy path; "strict": with `import ccshim.legacy`
first in strict mode (CCSHIM_LEGACY=strict); "checked": strict, and each
kernel given a signature that ties veros's s64[1] operands (the number of
systems, their length) to its buffers (ccshim.legacy.signature), then a
call whose mask disagrees with the systems, which must be refused.  Prints
one JSON line: the solution's bytes, the custom-call targets XLA was given,
the largest difference from scipy.linalg.solve_banded, and (checked) the
refusal's message.
"""
import json
import os
import sys

from project_modules import load_package_module

mode, root = sys.argv[1], sys.argv[2]
if mode != "xla":
    os.environ["CCSHIM_LEGACY"] = "strict"
    import ccshim.legacy  # the one line
# tdma_xla_encode_cpu's operands: a, b, c, d (the systems, each of length
# `stride`), system_depths (one per system), num_systems and stride as
# s64[1] constants; its results: the solution and a scratch row.
SIGNATURE = ("({t}[...n[0],s[0]], {t}[...n[0],s[0]], {t}[...n[0],s[0]], {t}[...n[0],s[0]], "
             "s32[...n[0]], n: s64[1], s: s64[1]) -> ({t}[...n[0],s[0]], {t}[s[0]])")
if mode == "checked":
    for kernel, t in (("tdma_cython_double", "f64"), ("tdma_cython_float", "f32")):
        ccshim.legacy.signature(kernel, SIGNATURE.format(t=t))

import jax
import numpy as np
from scipy.linalg import solve_banded

jax.config.update("jax_enable_x64", True)
# veros/__init__.py imports the whole model (h5py, loguru, ...): only the
# package path is needed for its solver module.
tdma_ = load_package_module(root, "veros.core.special.tdma_")

report = {"outputs": {}, "targets": {}, "scipy_error": {}}
rng = np.random.default_rng(2026)
for dtype in (np.float64, np.float32):
    shape = (6, 5, 16)
    a = rng.uniform(-1, 1, shape).astype(dtype)
    c = rng.uniform(-1, 1, shape).astype(dtype)
    b = (4 + rng.uniform(0, 1, shape)).astype(dtype)
    d = rng.uniform(-1, 1, shape).astype(dtype)
    # as veros's vertical mixing solvers: the bottom layers of each column dry
    interior = np.ones(shape, bool)
    interior[..., :3] = False
    edge = np.zeros(shape, bool)
    edge[..., 3] = True
    solve = jax.jit(lambda *args: tdma_.tdma(*args))
    out = np.asarray(solve(a, b, c, d, interior, edge))
    text = solve.lower(a, b, c, d, interior, edge).compile().as_text()
    name = np.dtype(dtype).name
    report["outputs"][name] = out.tobytes().hex()
    report["targets"][name] = sorted({line.split('custom_call_target="')[1].split('"')[0]
                                      for line in text.splitlines()
                                      if 'custom_call_target="' in line})
    worst = 0.0
    for idx in np.ndindex(shape[:-1]):
        k = 3  # the first wet layer; the system is the wet part of the column
        n = shape[-1] - k
        banded = np.zeros((3, n))
        banded[0, 1:] = c[idx][k:-1]
        banded[1] = b[idx][k:]
        banded[2, :-1] = a[idx][k + 1:]
        want = solve_banded((1, 1), banded, d[idx][k:].astype(np.float64))
        worst = max(worst, float(np.abs(out[idx][k:] - want).max() / np.abs(want).max()))
    report["scipy_error"][name] = worst
if mode == "checked":
    # A mask for one row of columns, not the six: system_depths then has 5
    # entries for 30 systems, which the kernel would read past.
    try:
        jax.block_until_ready(solve(a, b, c, d, interior[:1], edge))
        report["lie"] = "not refused"
    except Exception as e:  # XlaRuntimeError / JaxRuntimeError by release
        report["lie"] = str(e).splitlines()[0]
print(json.dumps(report))
