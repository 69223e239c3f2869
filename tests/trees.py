"""Comparing pytrees in tests: bitwise, PRNG keys by their data, NaN equal to NaN."""

import jax
import numpy as np


def _raw(x):
    if jax.dtypes.issubdtype(getattr(x, "dtype", None), jax.dtypes.prng_key):
        return np.asarray(jax.random.key_data(x))
    return np.asarray(x)


def leaves_equal(a, b) -> bool:
    """Same leaves, bitwise (structure not checked; `zip(strict=True)` checks the count)."""
    return all(
        np.array_equal(_raw(x), _raw(y), equal_nan=True)
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


def assert_same(expected, actual):
    """Same structure and every leaf bitwise equal; a failure names the leaf's path."""
    assert jax.tree.structure(expected) == jax.tree.structure(actual)
    leaves = jax.tree_util.tree_leaves_with_path(expected)
    for (path, a), b in zip(leaves, jax.tree.leaves(actual), strict=True):
        np.testing.assert_array_equal(_raw(b), _raw(a), err_msg=jax.tree_util.keystr(path))
