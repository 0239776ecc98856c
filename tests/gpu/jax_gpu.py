"""The legacy GPU example in real XLA, two ways, on the GPU:

(a) XLA's own legacy GPU path (register_ffi_target(api_version=0) on
    "CUDA", ffi_call(custom_call_api_version=2, legacy_backend_config=...));
(b) ccshim: add_gpu_v2 wrapped into a typed-FFI handler and registered on
    "CUDA" (the stream comes from XLA_FFI_Stream_Get).

Both run under jax.jit on the same device arrays; outputs must be
byte-identical and right, and a bad opaque must fail alike on both.  With
--ported, also (d): the kernel's native typed-FFI port
(examples/migration/ported/add_gpu_ffi.cu), which must match (b) byte for
byte.  Also
times a lax.fori_loop of calls on each path and prints the figures.

usage: jax_gpu.py KERNEL_LIBRARY [--ported PORTED_LIBRARY] [--cpu-self-check] [--no-timing]

--no-timing leaves the loop out (the run compute-sanitizer watches).

With --cpu-self-check the same steps run on the CPU with the CPU example
(add_v2), to check this script where there is no GPU.
"""

import argparse
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import ccshim
import ccshim.jax as cj

SIG_GPU = "(f32[128], f32[2048]) -> f32[2048]"


def timed(fn, *args, repeats=5):
    jax.block_until_ready(fn(*args))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("library")
    parser.add_argument("--cpu-self-check", action="store_true")
    parser.add_argument("--ported", help="the library of the native port (add_gpu_ffi)")
    parser.add_argument("--no-timing", action="store_true")
    args = parser.parse_args()

    platform = "cpu" if args.cpu_self_check else "cuda"
    kernel = "add_v2" if args.cpu_self_check else "add_gpu_v2"
    # The GPU kernel reads a decimal scale from the opaque; the CPU one none.
    opaque = b"" if args.cpu_self_check else b"2.5"
    bad_opaque = None if args.cpu_self_check else b"not a number"
    scale = 1.0 if args.cpu_self_check else 2.5

    lib = ccshim.load_legacy_library(args.library)
    device = jax.devices(platform)[0]
    print(f"jax {jax.__version__} on {device.platform}:{device.device_kind}; "
          f"kernel {kernel} from {args.library}")

    cj.register_xla_legacy("xla_" + kernel, (lib, kernel), platform=platform)
    cj.register_legacy("ccshim_" + kernel, (lib, kernel), platform=platform,
                       api_version=2, signature=SIG_GPU)

    b = jax.device_put(np.arange(128, dtype=np.float32) / 3, device)
    c = jax.device_put(np.sin(np.arange(2048, dtype=np.float32)), device)
    out = jax.ShapeDtypeStruct((2048,), jnp.float32)
    legacy = jax.jit(cj.xla_legacy_call("xla_" + kernel, out, api_version=2,
                                        opaque=opaque))
    typed = jax.jit(cj.legacy_call("ccshim_" + kernel, out, opaque=opaque))
    y_legacy = np.asarray(legacy(b, c))
    y_typed = np.asarray(typed(b, c))
    want = np.float32(scale) * (np.asarray(b)[np.arange(2048) % 128] + np.asarray(c))
    same = y_legacy.tobytes() == y_typed.tobytes()
    err = float(np.max(np.abs(y_typed - want)))
    print(f"(a) XLA legacy path vs (b) ccshim typed path: "
          f"{'byte-identical' if same else 'DIFFERENT'}; max |error| vs numpy {err:.3g}")
    ok = same and err < 1e-5

    if bad_opaque is not None:
        msgs = []
        for f in (cj.xla_legacy_call("xla_" + kernel, out, api_version=2,
                                     opaque=bad_opaque),
                  cj.legacy_call("ccshim_" + kernel, out, opaque=bad_opaque)):
            try:
                jax.block_until_ready(jax.jit(f)(b, c))
                msgs.append("no error")
            except Exception as e:  # JaxRuntimeError
                msgs.append(str(e).splitlines()[0])
        alike = all("add_gpu_v2: the opaque is not a number" in m for m in msgs)
        print(f"failure on both paths: {'alike' if alike else 'DIFFERENT'}: {msgs}")
        ok = ok and alike

    if args.ported and not args.cpu_self_check:
        import ctypes
        ported = ctypes.CDLL(args.ported)
        jax.ffi.register_ffi_target("ported_add_gpu", ccshim.pycapsule(ported.add_gpu_ffi),
                                    platform="CUDA")
        native = jax.jit(lambda b, c: jax.ffi.ffi_call("ported_add_gpu", out)(
            b, c, scale=np.float32(scale)))
        y_native = np.asarray(native(b, c))
        same = y_native.tobytes() == y_typed.tobytes()
        print(f"(d) the native port vs (b) ccshim: {'byte-identical' if same else 'DIFFERENT'}")
        ok = ok and same

    if args.no_timing:
        print("PASS" if ok else "FAIL")
        return 0 if ok else 1
    n = 1000
    loop = lambda f: jax.jit(lambda b, c: jax.lax.fori_loop(  # noqa: E731
        0, n, lambda i, acc: f(b, acc), c))
    t_legacy = timed(loop(cj.xla_legacy_call("xla_" + kernel, out, api_version=2,
                                             opaque=opaque)), b, c)
    t_typed = timed(loop(cj.legacy_call("ccshim_" + kernel, out, opaque=opaque)), b, c)
    print(f"lax.fori_loop of {n} calls: legacy {t_legacy / n * 1e6:.2f} us/call, "
          f"ccshim {t_typed / n * 1e6:.2f} us/call, ratio {t_typed / t_legacy:.3f}")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
