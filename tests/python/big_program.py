"""An exported program with MIB MiB of constants baked in, as programs
with weights or tables are, and one legacy call (scale_v1 of
tests/python/kernels.c, api_version 1): written by the running JAX.

    python big_program.py OUT MIB

Run in a process of its own, so that the constant's memory is not the
test's."""
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax import export

out, mib = sys.argv[1], int(sys.argv[2])
table = (np.arange(mib << 18, dtype=np.int32) % 7).astype(np.float32)  # 2^18 f32 a MiB


def program(x):
    y = jax.ffi.ffi_call("scale_v1", jax.ShapeDtypeStruct((256,), jnp.float32),
                         custom_call_api_version=1)(x)
    return y + jnp.max(jnp.asarray(table))


exported = export.export(jax.jit(program), platforms=["cpu"], disabled_checks=[
    export.DisabledSafetyCheck.custom_call("scale_v1")])(jax.ShapeDtypeStruct((256,), jnp.float32))
with open(out, "wb") as f:
    f.write(exported.serialize())
