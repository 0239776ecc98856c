"""Real artifacts of 2023: programs exported and serialized by JAX 0.4.23
(December 2023, from PyPI), whose CPU linear algebra lowers to jaxlib's
legacy LAPACK/BLAS custom calls (lapack_sgetrf, ..., api_version 2), with
the outputs that JAX computed by running each deserialized artifact.

Run by tools/setup.sh with that JAX, in a venv of its own:

    python jax2023_artifacts.py OUT_DIR

JAX's own back-compatibility data of that year (serialized modules and the
outputs it recorded) is not in any jax wheel or sdist on PyPI; this makes
the same kind of artifact with the JAX of that year, which is what the
tests need: bytes that today's JAX did not write, calling targets today's
jaxlib no longer registers.
"""

import json
import pathlib
import sys

import jax
import jax.numpy as jnp
import jaxlib
import numpy as np
from jax.experimental.export import export, serialization

jax.config.update("jax_enable_x64", True)

DTYPES = {"f32": np.float32, "f64": np.float64, "c64": np.complex64, "c128": np.complex128}


def _spd(n, dtype, rng):
    a = rng.standard_normal((n, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal((n, n))
    return (a @ a.conj().T + n * np.eye(n)).astype(dtype)


def cases():
    """(name, function, inputs) per program: the linear algebra whose CPU
    lowering in that JAX called jaxlib's legacy kernels."""
    rng = np.random.default_rng(2023)
    for dt, dtype in DTYPES.items():
        iota = np.arange(9, dtype=dtype).reshape(3, 3)
        yield f"lu_{dt}", jax.lax.linalg.lu, (iota,)
        batch = np.stack([iota + np.eye(3, dtype=dtype) * k for k in range(1, 3)])
        yield f"lu_batched_{dt}", jax.lax.linalg.lu, (batch,)
        yield f"cholesky_{dt}", lambda x: jax.lax.linalg.cholesky(x, symmetrize_input=False), \
            (_spd(4, dtype, rng),)
        # full rank, so that Q is determined to rounding
        yield f"qr_{dt}", lambda x: jnp.linalg.qr(x), (
            rng.standard_normal((4, 3)).astype(dtype) + np.eye(4, 3, dtype=dtype),)
        a = np.tril(_spd(4, dtype, rng))
        b = rng.standard_normal((4, 2)).astype(dtype)
        yield f"trsm_{dt}", lambda a, b: jax.lax.linalg.triangular_solve(
            a, b, left_side=True, lower=True), (a, b)


def _targets(exported) -> list[str]:
    text = exported.mlir_module()
    found = set()
    for line in text.splitlines():
        if "stablehlo.custom_call @" in line:
            found.add(line.split("stablehlo.custom_call @", 1)[1].split("(", 1)[0])
    return sorted(found)


def main(out_dir: str) -> None:
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    index = {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "cases": []}
    for name, fn, inputs in cases():
        exported = export.export(jax.jit(fn))(*inputs)
        data = serialization.serialize(exported)
        # The outputs of the very bytes written, run by this JAX.
        outputs = export.call_exported(serialization.deserialize(data))(*inputs)
        outputs = jax.tree_util.tree_leaves(outputs)
        (out / f"{name}.jax").write_bytes(bytes(data))
        np.savez(out / f"{name}.npz", *inputs,
                 **{f"out_{i}": np.asarray(o) for i, o in enumerate(outputs)})
        index["cases"].append({"name": name, "targets": _targets(exported),
                               "inputs": len(inputs), "outputs": len(outputs)})
    (out / "index.json").write_text(json.dumps(index, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
