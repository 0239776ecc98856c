"""The GPU benchmark: one legacy CUDA kernel (bench/gpu_kernels.cu,
out = a * x + y) in JAX three ways, on the GPU:

  legacy   XLA's own legacy GPU path (register_xla_legacy, api_version 2,
           its binary descriptor as the opaque)
  ccshim   the same kernel wrapped by ccshim into a typed-FFI handler
  typed    the typed-FFI handler of the same kernel, written by hand with
           XLA's C++ bindings (saxpy_gpu_ffi)

First the three must give the same bytes, at sizes from 1 to 16M elements;
then each is timed, the paths interleaved round by round, best of
``--rounds``: per call in a lax.fori_loop of 1000 calls on 1024 elements
(beside the same loop around XLA's own add, the loop's cost), and per call
at 16M elements (a loop of 20 calls).  Prints a table, and with --json
writes the figures.

usage: jax_gpu.py BENCH_GPU_LIBRARY [--rounds N] [--json FILE]
"""

import argparse
import json
import struct
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import ccshim
import ccshim.jax as cj

A = 2.5
SIZES = (1, 4097, 1 << 20, 1 << 24)
PATHS = ("legacy", "ccshim", "typed")


def descriptor(n: int) -> bytes:
    return struct.pack("<qff", n, A, 0.0)  # int64 n, float a, padding: 16 bytes


def calls(lib_path):
    """{path: function of (n) giving a call (x, y) -> out}."""
    lib = ccshim.load_legacy_library(lib_path)
    cj.register_xla_legacy("bench_saxpy_legacy", (lib, "saxpy_gpu_v2"), platform="cuda")
    cj.register_legacy("bench_saxpy_ccshim", (lib, "saxpy_gpu_v2"), platform="cuda",
                       api_version=2, signature="(f32[n], f32[n]) -> f32[n]")
    jax.ffi.register_ffi_target("bench_saxpy_typed", ccshim.pycapsule(lib.saxpy_gpu_ffi),
                                platform="CUDA")

    def out(n):
        return jax.ShapeDtypeStruct((n,), jnp.float32)

    return {
        "legacy": lambda n: cj.xla_legacy_call("bench_saxpy_legacy", out(n), api_version=2,
                                               opaque=descriptor(n)),
        "ccshim": lambda n: cj.legacy_call("bench_saxpy_ccshim", out(n), opaque=descriptor(n)),
        "typed": lambda n: (lambda x, y: jax.ffi.ffi_call("bench_saxpy_typed", out(n))(
            x, y, a=np.float32(A))),
    }


def loop(call, count):
    return jax.jit(lambda x, y: jax.lax.fori_loop(0, count, lambda i, acc: call(x, acc), y))


def best_per_call(fns, args, count, rounds):
    """{name: best seconds per call}, the functions interleaved each round."""
    for fn in fns.values():
        jax.block_until_ready(fn(*args))
    best = {name: float("inf") for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            jax.block_until_ready(fn(*args))
            best[name] = min(best[name], (time.perf_counter() - t0) / count)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("library")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json")
    args = parser.parse_args()
    device = jax.devices("cuda")[0]
    paths = calls(args.library)
    rng = np.random.default_rng(0)
    result = {"device": device.device_kind, "jax": jax.__version__, "same_bytes": {}}

    def operands(n):  # x, y: n random floats each, on the GPU
        return tuple(jax.device_put(rng.standard_normal(n, dtype=np.float32), device)
                     for _ in range(2))

    for n in SIZES:
        x, y = operands(n)
        outs = {p: np.asarray(jax.jit(paths[p](n))(x, y)) for p in PATHS}
        want = np.float32(A) * np.asarray(x) + np.asarray(y)
        same = all(outs[p].tobytes() == outs["legacy"].tobytes() for p in PATHS)
        right = bool(np.allclose(outs["legacy"], want, rtol=1e-5, atol=1e-5))
        result["same_bytes"][str(n)] = same and right

    small, big = 1024, 1 << 24
    x, y = operands(small)
    fns = {p: loop(paths[p](small), 1000) for p in PATHS}
    fns["xla add (the loop's cost)"] = loop(lambda x, acc: x + acc, 1000)
    result["us_per_call_1000_loop"] = {k: v * 1e6 for k, v in
                                       best_per_call(fns, (x, y), 1000, args.rounds).items()}
    fns = {p: loop(paths[p](big), 20) for p in PATHS}
    result["us_per_call_16M"] = {k: v * 1e6 for k, v in
                                 best_per_call(fns, operands(big), 20, args.rounds).items()}

    print(f"GPU benchmark on {device.device_kind}, JAX {jax.__version__}, best of "
          f"{args.rounds} rounds, paths interleaved")
    print("same bytes on all three paths: " + ", ".join(
        f"n={n}: {'yes' if v else 'NO'}" for n, v in result["same_bytes"].items()))
    print(f"{'path':28} {'us/call, 1000-call loop':>24} {'us/call at 16M':>16}")
    legacy_small = result["us_per_call_1000_loop"]["legacy"]
    legacy_big = result["us_per_call_16M"]["legacy"]
    for name, t in result["us_per_call_1000_loop"].items():
        t_big = result["us_per_call_16M"].get(name)
        big_text = f"{t_big:9.1f} ({t_big / legacy_big:.3f}x)" if t_big else ""
        print(f"{name:28} {t:12.2f} ({t / legacy_small:.3f}x) {big_text:>16}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    ok = all(result["same_bytes"].values())
    print("PASS" if ok else "FAIL: the paths' bytes differ")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
