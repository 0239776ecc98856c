"""What the three stages share: the build's libraries, the descriptors as
the legacy call sites packed them, inputs, and NumPy references.

Each stage is run as ``python examples/migration/stageN_*.py [BUILD_DIR]``
(default: build); make test runs all three (tests/python/test_migration.py).
"""
import os
import pathlib
import struct
import sys

# Four host devices for the sharding checks; set before JAX starts.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                     os.environ.get("CCSHIM_BUILD_DIR", ROOT / "build")).resolve()
os.environ.setdefault("CCSHIM_LIBRARY", str(BUILD / "libccshim.so"))
LEGACY_LIB = BUILD / "examples" / "libmigration_legacy.so"
PORTED_LIB = BUILD / "examples" / "libmigration_ported.so"


# --- The descriptors, packed as the legacy call sites packed them -------------

def rms_norm_descriptor(rows, cols, eps):
    """rms_norm's first operand: struct rms_norm_descriptor, as u8[16]."""
    return np.frombuffer(struct.pack("<iifi", rows, cols, eps, 0), np.uint8)


def clip_descriptor(lo, hi, n):
    """clip's opaque bytes: struct clip_descriptor."""
    return struct.pack("<ffq", lo, hi, n)


# --- Inputs and references --------------------------------------------------------

rng = np.random.default_rng(7)
X = rng.standard_normal((8, 64)).astype(np.float32) * 3
V = rng.standard_normal(1000).astype(np.float32) * 2


def rms_norm_ref(x, eps):
    x64 = x.astype(np.float64)
    return (x64 / np.sqrt(np.mean(x64 * x64, axis=-1, keepdims=True) + eps)).astype(np.float32)


def clip_ref(x, lo, hi):
    return np.clip(x, np.float32(lo), np.float32(hi))


def moments_ref(x):
    x64 = x.astype(np.float64)
    return np.float32(x64.mean()), np.float32(x64.var())


# --- Checks -----------------------------------------------------------------------

failures = []


def check(what, got, want, rtol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    ok = got.shape == want.shape and np.allclose(got, want, rtol=rtol, atol=1e-6)
    print(f"  {'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def check_raises(what, fn, message):
    try:
        fn()
    except Exception as e:  # XLA raises its own error types
        ok = message in str(e)
        print(f"  {'ok  ' if ok else 'FAIL'} {what}: {str(e).splitlines()[0][:100]}")
        if not ok:
            failures.append(what)
        return
    print(f"  FAIL {what}: no error")
    failures.append(what)


def check_kernels(rms_norm, clip, moments):
    """The checks every stage makes of its three kernels, under jit."""
    import jax

    check("rms_norm", jax.jit(rms_norm)(X), rms_norm_ref(X, 1e-5))
    check("clip", jax.jit(clip, static_argnums=(1, 2))(V, -1.5, 2.5), clip_ref(V, -1.5, 2.5))
    check("moments", jax.jit(moments)(V), moments_ref(V), rtol=1e-5)
    check_raises("clip refuses lo > hi", lambda: clip(V, 2.5, -1.5).block_until_ready(),
                 "clip: lo (2.5) must not exceed hi (-1.5)")


def finish(stage):
    if failures:
        print(f"{stage}: {len(failures)} check(s) failed")
        sys.exit(1)
    print(f"{stage}: all checks passed")
