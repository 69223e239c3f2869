import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite.environment.spaces import Box, Discrete, flat_dim


def test_discrete_sample_and_contains():
    space = Discrete(3)
    samples = jax.vmap(space.sample)(jax.random.split(jax.random.key(0), 1000))
    assert samples.dtype == jnp.int32
    assert set(np.unique(samples).tolist()) == {0, 1, 2}
    assert bool(space.contains(2)) and not bool(space.contains(3)) and not bool(space.contains(-1))
    # Integers only, as gymnasium's Discrete: not 1.5, not 1.0, not True.
    for x in (1.5, jnp.float32(1.0), True):
        assert not bool(space.contains(x)), x
    assert bool(space.contains(jnp.int32(1))) and bool(space.contains(np.int64(1)))
    # One scalar, as gymnasium's: an array is not an element (and the answer is one bool); a
    # 64-bit integer is not cut to 32 bits first (2**32 + 1 would become 1).
    for x in (jnp.array([0, 1]), np.array([1]), np.int64(2**32 + 1)):
        assert space.contains(x).shape == () and not bool(space.contains(x)), x
    assert jax.jit(space.contains)(jnp.int32(2)) and not jax.jit(space.contains)(jnp.int32(3))
    assert flat_dim(space) == 1
    with pytest.raises(ValueError, match=r"Discrete\(200\): dtype int8 cannot hold .* 0 to 199"):
        Discrete(200, jnp.int8)


def test_box_sample_within_bounds_and_contains():
    space = Box(jnp.array([-1.0, 0.0]), jnp.array([1.0, 5.0]), (2,))
    samples = jax.vmap(space.sample)(jax.random.split(jax.random.key(1), 1000))
    assert samples.shape == (1000, 2) and samples.dtype == jnp.float32
    assert np.all(samples >= space.low) and np.all(samples <= space.high)
    assert samples[:, 1].max() > 4.0  # the second dimension spans [0, 5]
    assert bool(space.contains(jnp.array([0.0, 4.0])))
    assert not bool(space.contains(jnp.array([0.0, 6.0])))
    assert not bool(space.contains(jnp.zeros(3)))


def test_box_sample_near_the_dtype_maximum_is_finite_and_spans_the_box():
    big = float(np.finfo(np.float32).max)
    space = Box(-big, big, (2000,))
    samples = space.sample(jax.random.key(2))
    # jax.random.uniform(low, high) computes high - low = inf here, and every sample was inf.
    assert np.all(np.isfinite(samples)) and bool(space.contains(samples))
    assert samples.min() < -0.9 * big and samples.max() > 0.9 * big
    assert abs(float(np.mean(samples / big))) < 0.1  # uniform: mean 0, std of the mean ~0.013
    # A box whose width fits keeps jax.random.uniform's samples bit for bit.
    small = Box(jnp.array([-1.0, 0.0]), jnp.array([1.0, 5.0]), (2,))
    key = jax.random.key(3)
    expected = jax.random.uniform(key, (2,), jnp.float32, small.low, small.high)
    np.testing.assert_array_equal(small.sample(key), expected)


def test_box_rejects_bad_bounds_and_unbounded_sampling():
    with pytest.raises(ValueError, match="low <= high"):
        Box(1.0, 0.0, (1,))
    with pytest.raises(ValueError, match="unbounded"):
        Box(-jnp.inf, jnp.inf, (2,)).sample(jax.random.key(0))
    with pytest.raises(ValueError, match="n >= 1"):
        Discrete(0)
