"""Artifacts of many JAX releases: programs exported and serialized by the
JAX this runs under (one release per venv, made by tools/setup.sh from
PyPI), with the outputs that JAX computed by running each deserialized
artifact.  Kinds of program whose lowering changed over the years: CPU
LAPACK (legacy custom calls up to jaxlib 0.4.30, typed FFI after), an FFT
(jaxlib's ducc_fft custom calls early, a StableHLO op later), a
shape-polymorphic batch (a symbolic batch size, run at two sizes), and a
lax.scan whose body calls LAPACK.  No release can serialize an ordered
effect with a host callback (jax.export refuses host callbacks), so none is
made.

    python jax_artifacts.py OUT_DIR

writes OUT_DIR/NAME.jax, NAME.npz (inputs arr_I, then out_I; a polymorphic
case has several runs: run_R_arr_I, run_R_out_I) and index.json.
"""

import json
import pathlib
import sys

import jax
import jax.numpy as jnp
import jaxlib
import numpy as np

jax.config.update("jax_enable_x64", True)


def _api():
    """(export, serialize, deserialize, call, symbolic_shape) of this JAX:
    jax.export from 0.4.30, jax.experimental.export before."""
    try:
        from jax import export as ex
        if hasattr(ex, "deserialize"):
            return (lambda f, *a: ex.export(jax.jit(f))(*a), lambda e: e.serialize(),
                    lambda b: ex.deserialize(bytearray(b)), lambda e, *a: e.call(*a),
                    ex.symbolic_shape)
    except ImportError:
        pass
    from jax.experimental import export as ex
    if hasattr(ex, "deserialize"):  # 0.4.24 to 0.4.29
        return (lambda f, *a: ex.export(jax.jit(f))(*a), ex.serialize,
                lambda b: ex.deserialize(bytearray(b)), lambda e, *a: ex.call_exported(e)(*a),
                ex.symbolic_shape)
    from jax.experimental.export import export as ex2, serialization  # 0.4.22, 0.4.23
    return (lambda f, *a: ex2.export(jax.jit(f))(*a), serialization.serialize,
            lambda b: serialization.deserialize(bytearray(b)),
            lambda e, *a: ex2.call_exported(e)(*a), ex2.symbolic_shape)


def _spd(n, dtype, rng, batch=()):
    a = rng.standard_normal((*batch, n, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal((*batch, n, n))
    return (a @ np.swapaxes(a.conj(), -1, -2) + n * np.eye(n)).astype(dtype)


def cases(symbolic_shape):
    """(name, function, argument specs or None, runs): each run a tuple of
    inputs; the specs are the exported shapes (None: the first run's)."""
    rng = np.random.default_rng(2024)
    iota = np.arange(9, dtype=np.float32).reshape(3, 3)
    yield "lu_f32", jax.lax.linalg.lu, None, [(iota,)]
    yield "lu_c128", jax.lax.linalg.lu, None, [(iota.astype(np.complex128) + 1j * np.eye(3),)]
    yield "cholesky_f64", lambda x: jax.lax.linalg.cholesky(x, symmetrize_input=False), None, \
        [(_spd(4, np.float64, rng),)]
    yield "qr_c64", lambda x: tuple(jnp.linalg.qr(x)), None, [
        ((rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))).astype(np.complex64)
         + np.eye(4, 3, dtype=np.complex64),)]
    a = np.tril(_spd(4, np.float32, rng))
    yield "trsm_f32", lambda a, b: jax.lax.linalg.triangular_solve(
        a, b, left_side=True, lower=True), None, [(a, rng.standard_normal((4, 2)).astype(a.dtype))]
    yield "fft_c64", jnp.fft.fft, None, [
        ((rng.standard_normal(16) + 1j * rng.standard_normal(16)).astype(np.complex64),)]
    yield "rfft2_f64", jnp.fft.rfft2, None, [(rng.standard_normal((4, 6)),)]
    # A batch of any size: exported once with a symbolic size, run at two.
    spec = jax.ShapeDtypeStruct(symbolic_shape("b, 3, 3"), np.float32)
    yield "lu_poly_batch_f32", jax.lax.linalg.lu, (spec,), [
        (np.stack([iota + k * np.eye(3, dtype=np.float32) for k in range(1, 3)]),),
        (np.stack([iota + k * np.eye(3, dtype=np.float32) for k in range(1, 6)]),)]

    def scan_cholesky(stack):
        def body(carry, m):
            l = jax.lax.linalg.cholesky(m, symmetrize_input=False)
            return carry + jnp.sum(l), jnp.diagonal(l)
        return jax.lax.scan(body, jnp.zeros((), stack.dtype), stack)
    yield "scan_cholesky_f64", scan_cholesky, None, [(_spd(3, np.float64, rng, batch=(4,)),)]


def _targets(text):
    found = set()
    for line in text.splitlines():
        if "stablehlo.custom_call @" in line:
            found.add(line.split("stablehlo.custom_call @", 1)[1].split("(", 1)[0])
    return sorted(found)


def main(out_dir):
    export, serialize, deserialize, call, symbolic_shape = _api()
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    index = {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "cases": []}
    for name, fn, specs, runs in cases(symbolic_shape):
        exported = export(fn, *(specs or runs[0]))
        data = bytes(serialize(exported))
        loaded = deserialize(data)
        arrays = {}
        for r, inputs in enumerate(runs):
            # The outputs of the very bytes written, run by this JAX.
            outputs = jax.tree_util.tree_leaves(call(loaded, *inputs))
            prefix = f"run_{r}_" if len(runs) > 1 else ""
            arrays.update({f"{prefix}arr_{i}": np.asarray(x) for i, x in enumerate(inputs)})
            arrays.update({f"{prefix}out_{i}": np.asarray(o) for i, o in enumerate(outputs)})
        (out / f"{name}.jax").write_bytes(data)
        np.savez(out / f"{name}.npz", **arrays)
        index["cases"].append({
            "name": name, "targets": _targets(exported.mlir_module()), "runs": len(runs),
            "inputs": len(runs[0]), "outputs": len(outputs),
            "calling_convention": getattr(exported, "calling_convention_version", None) or
            getattr(exported, "mlir_module_serialization_version", None)})
    (out / "index.json").write_text(json.dumps(index, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
