"""my_legacy_ext's own tests, as such a project ships them: run unchanged
through ``ccshim legacy --strict -- python -m pytest`` by
tests/wheel/use_wheel.py."""
import jax
import numpy as np
import pytest

import my_legacy_ext

X = np.linspace(-1, 1, 256, dtype=np.float32)


def test_affine_under_jit():
    y = jax.jit(my_legacy_ext.affine)(X)
    np.testing.assert_array_equal(np.asarray(y), 2 * X + 1)


def test_affine_in_a_larger_program():
    y = jax.jit(lambda x: my_legacy_ext.affine(x * 3) - 1)(X)
    three, one = np.float32(3), np.float32(1)
    np.testing.assert_array_equal(np.asarray(y), (2 * (X * three) + one) - one)


def test_kernel_failure_is_an_error():
    x = X.copy()
    x[7] = np.nan
    with pytest.raises(Exception, match=r"my_affine: x\[7\] is NaN"):
        jax.block_until_ready(jax.jit(my_legacy_ext.affine)(x))
