"""The legacy BLAS kernel of examples/blas, wrapped by ccshim and called from
JAX, against JAX's own triangular solve (jax.lax.linalg.triangular_solve)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ccshim
import ccshim.jax as cj
from conftest import BUILD

LIB = BUILD / "examples" / "libblas_trsm.so"


@pytest.fixture(scope="module")
def trsm():
    if not LIB.exists():
        pytest.skip("examples/blas not built (no CBLAS)")
    cj.register_legacy("blas_strsm", (ccshim.load_legacy_library(LIB), "blas_strsm"),
                       api_version=2)

    def solve(a, b, *, left, lower, trans, unit, alpha):
        """op(A) X = alpha B (left) or X op(A) = alpha B, JAX's row-major
        arrays handed over transposed, as BLAS reads column-major."""
        batch, m, n = b.shape
        flags = [jnp.int32(v) for v in (left, lower, trans, unit, m, n, batch)]
        call = cj.legacy_call("blas_strsm", jax.ShapeDtypeStruct((batch, n, m), jnp.float32))
        x = call(*flags, jnp.float32(alpha), jnp.swapaxes(a, 1, 2), jnp.swapaxes(b, 1, 2))
        return jnp.swapaxes(x, 1, 2)

    return solve


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1])
def test_against_jax_triangular_solve(trsm, left, lower, trans):
    rng = np.random.default_rng(3)
    m, n, batch = 5, 4, 3
    k = m if left else n
    a = np.tril(rng.standard_normal((batch, k, k))) if lower else \
        np.triu(rng.standard_normal((batch, k, k)))
    a = (a + 4 * np.eye(k)).astype(np.float32)
    b = rng.standard_normal((batch, m, n)).astype(np.float32)
    got = jax.jit(lambda a, b: trsm(a, b, left=left, lower=lower, trans=trans, unit=0,
                                    alpha=2.0))(a, b)
    want = jax.lax.linalg.triangular_solve(a, 2.0 * b, left_side=left, lower=lower,
                                           transpose_a=bool(trans))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
