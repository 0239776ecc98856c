"""End to end in XLA:CPU: a trivial legacy kernel (out = x + 1) through ccshim
inside a lax.fori_loop of 10^4 iterations, against the same kernel written
as a native typed-FFI handler, and against XLA's own legacy path.

Each variant is jitted once; then the loop is timed repeatedly, the three
variants interleaved, and the medians compared.

usage: python bench/jax_e2e.py [--json FILE] [--runs N]
"""

import argparse
import ctypes
import json
import os
import pathlib
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import ccshim
import ccshim.jax as cj

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("CCSHIM_BUILD_DIR", ROOT / "build"))
ITERATIONS = 10_000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default=str(ROOT / "bench" / "e2e.json"))
    parser.add_argument("--runs", type=int, default=201)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    lib = ccshim.load_legacy_library(BUILD / "bench" / "libccshim_e2e_kernels.so")
    cj.register_legacy("e2e_ccshim", (lib, "e2e_incr_v2"), api_version=2,
                       signature="(f32[]) -> f32[]")
    native = ctypes.cast(lib.e2e_incr_typed, ctypes.c_void_p).value
    jax.ffi.register_ffi_target("e2e_native", jax.ffi.pycapsule(native), platform="cpu")
    cj.register_xla_legacy("e2e_legacy", (lib, "e2e_incr_v2"))

    out = jax.ShapeDtypeStruct((), jnp.float32)
    calls = {
        "ccshim": cj.legacy_call("e2e_ccshim", out),
        "native": jax.ffi.ffi_call("e2e_native", out),
        "xla_legacy": cj.xla_legacy_call("e2e_legacy", out, api_version=2),
    }
    loops = {name: jax.jit(lambda x, f=f: jax.lax.fori_loop(0, ITERATIONS,
                                                             lambda i, v: f(v), x))
             for name, f in calls.items()}
    x = np.float32(0)
    for name, f in loops.items():
        assert float(f(x)) == ITERATIONS, name  # compiled, and right
    # Rounds of all three, in a rotating order; a measurement's ratio is the
    # median of each round's ccshim/native, which cancels drift in the
    # machine's speed.  Several measurements give the spread.
    names = list(loops)
    measurements = []
    for m in range(args.repeats):
        samples = {name: [] for name in loops}
        ratios = []
        for r in range(args.runs):
            for name in names[r % 3:] + names[:r % 3]:
                t0 = time.perf_counter()
                jax.block_until_ready(loops[name](x))
                samples[name].append(time.perf_counter() - t0)
            ratios.append(samples["ccshim"][-1] / samples["native"][-1])
        med = {name: statistics.median(v) for name, v in samples.items()}
        measurements.append({"median_s": med, "ratio": statistics.median(ratios),
                             "ns_per_iteration": {n: v / ITERATIONS * 1e9
                                                  for n, v in med.items()}})
    ratio_list = sorted(m["ratio"] for m in measurements)
    ratio = statistics.median(ratio_list)
    per_call = {n: statistics.median(m["ns_per_iteration"][n] for m in measurements)
                for n in names}
    legacy = statistics.median(m["median_s"]["ccshim"] / m["median_s"]["xla_legacy"]
                               for m in measurements)
    print(f"jax {jax.__version__}: lax.fori_loop of {ITERATIONS} calls; {args.repeats} "
          f"measurements of {args.runs} rounds")
    for name in names:
        print(f"  {name:10s} {per_call[name]:7.1f} ns/iteration (median)")
    print(f"  ccshim / native typed handler: {ratio:.3f} (median; range "
          f"{ratio_list[0]:.3f}..{ratio_list[-1]:.3f}; target <= 1.03)")
    print(f"  ccshim / XLA's legacy path:    {legacy:.3f}")
    with open(args.json, "w") as f:
        json.dump({"jax": jax.__version__, "iterations": ITERATIONS, "runs": args.runs,
                   "ns_per_iteration": per_call, "ratio_ccshim_over_native": ratio,
                   "ratio_range": [ratio_list[0], ratio_list[-1]],
                   "measurements": measurements}, f, indent=2)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
