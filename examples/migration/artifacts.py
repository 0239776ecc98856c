"""Exported programs, the three ways: a program exported at stage 1 keeps
its legacy calls in the artifact; `ccshim rewrite` makes them typed calls
on targets ccshim wraps, and the artifact runs without XLA's legacy path;
once the code is migrated, exporting it again gives an artifact with typed
calls only.

    python examples/migration/artifacts.py [BUILD_DIR] legacy|rewritten|native

Each way runs in a process of its own (a target name is registered on one
path per process), in that order; make test runs all three
(tests/python/test_migration.py).  The artifacts go to
BUILD_DIR/examples/artifacts/JAX_VERSION: two JAX releases' runs (make test's
two suites, side by side) never read each other's.
"""
import os
import subprocess
import sys

import common
from common import V, X, check

import jax
import numpy as np
from jax import export

import ccshim
import ccshim.export as ce

HERE = common.BUILD / "examples" / "artifacts" / jax.__version__
LEGACY = HERE / "program.legacy.jax"
REWRITTEN = HERE / "program.jax"
NATIVE = HERE / "program.native.jax"
OUTPUTS = HERE / "legacy_outputs.npz"


def program(rms_norm, clip, moments):
    def fn(x, v):
        return rms_norm(x), clip(v, -1.5, 2.5), moments(v)
    return fn


def legacy():
    import stage1_legacy as stage1

    # Exporting: jax.export refuses custom calls it does not know to be
    # stable unless told; old artifacts were made so.
    exported = export.export(
        jax.jit(program(stage1.rms_norm, stage1.clip, stage1.moments)),
        disabled_checks=[export.DisabledSafetyCheck.custom_call(name)
                         for name in ("rms_norm", "clip", "moments")])(X, V)
    LEGACY.write_bytes(exported.serialize())
    outputs = exported.call(X, V)
    np.savez(OUTPUTS, *outputs)
    check("the legacy artifact on XLA's legacy path: rms_norm", outputs[0],
          common.rms_norm_ref(X, 1e-5))
    check("... clip", outputs[1], common.clip_ref(V, -1.5, 2.5))


def rewritten():
    # Rewriting: each legacy call becomes a typed call on ccshim.vN.NAME,
    # the opaque bytes an attribute; the input is not modified.
    subprocess.run([str(common.BUILD / "tools" / "ccshim"), "rewrite", str(LEGACY),
                    str(REWRITTEN)], check=True,
                   env=dict(os.environ, CCSHIM_PYTHON=sys.executable))
    # Loading: the kernels it needs, from the unchanged library, then call.
    lib = ccshim.load_legacy_library(common.LEGACY_LIB)
    ce.register(REWRITTEN, {name: (lib, name) for name in ("rms_norm", "clip", "moments")})
    outputs = ce.load(REWRITTEN).call(X, V)
    same_bytes(outputs, "the rewritten artifact through ccshim")
    claim("no legacy call left in it",
          {c.kind for c in ce.read(REWRITTEN).calls()} == {"ccshim"})


def native():
    import stage3_ported as stage3  # clip native; rms_norm and moments wrapped

    exported = export.export(
        jax.jit(program(stage3.wrapped.rms_norm, stage3.clip, stage3.wrapped.moments)),
        disabled_checks=[export.DisabledSafetyCheck.custom_call(name)
                         for name in ("rms_norm", "clip_ffi", "moments")])(X, V)
    NATIVE.write_bytes(exported.serialize())
    kinds = {c.target: c.kind for c in ce.read(NATIVE).calls()}
    claim("every call of the re-exported program is typed",
          list(kinds.values()) == ["typed"] * 3)
    outputs = export.deserialize(bytearray(NATIVE.read_bytes())).call(X, V)
    same_bytes(outputs, "the natively re-exported artifact")


def claim(what, ok):
    print(f"  {'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        common.failures.append(what)


def same_bytes(outputs, what):
    with np.load(OUTPUTS) as legacy_outputs:
        want = [legacy_outputs[f"arr_{i}"] for i in range(len(legacy_outputs.files))]
    claim(f"{what}, byte for byte against the legacy artifact on XLA's legacy path",
          len(outputs) == len(want) and
          all(np.asarray(o).tobytes() == w.tobytes() for o, w in zip(outputs, want)))


if __name__ == "__main__":
    way = sys.argv[2] if len(sys.argv) > 2 else "legacy"
    HERE.mkdir(parents=True, exist_ok=True)
    print(f"exported programs: {way}")
    {"legacy": legacy, "rewritten": rewritten, "native": native}[way]()
    common.finish(f"artifacts, {way}")
