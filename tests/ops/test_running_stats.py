"""Tests for rlsuite.ops.running_stats against numpy moments of the concatenated data."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite.ops import running_stats as rs

update = jax.jit(rs.update)
merge = jax.jit(rs.merge)


def _fold(stats, batches):
    for b in batches:
        stats = update(stats, b)
    return stats


def _uneven_batches(rng, sizes, shape, loc=0.0, scale=1.0):
    return [(loc + scale * rng.normal(size=(n, *shape))).astype(np.float32) for n in sizes]


def test_init():
    s = rs.init((3, 2))
    assert s.mean.shape == s.var.shape == (3, 2) and s.count.shape == ()
    assert s.mean.dtype == jnp.float32 and float(s.count) == 0.0
    np.testing.assert_array_equal(s.var, 1.0)
    # Before any data, normalize is the identity (up to eps).
    x = jnp.array([[1.0, -2.0]] * 3)
    np.testing.assert_allclose(rs.normalize(s, x), x, rtol=1e-6)


@pytest.mark.parametrize("shape", [(), (3,), (2, 2)])
def test_matches_numpy_after_uneven_batches(shape):
    rng = np.random.default_rng(0)
    sizes = [1, 7, 2, 30, 1, 1, 13, 5, 64, 3]  # includes single samples (Welford updates)
    batches = _uneven_batches(rng, sizes, shape, loc=3.0, scale=2.0)
    s = _fold(rs.init(shape), batches)
    data = np.concatenate(batches).astype(np.float64)
    assert float(s.count) == sum(sizes)
    np.testing.assert_allclose(s.mean, data.mean(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s.var, data.var(0), rtol=1e-4)


def test_multiple_leading_axes():
    # A [num_steps, num_envs, obs] rollout is folded in as num_steps * num_envs samples.
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 6, 3)).astype(np.float32)
    s = rs.update(rs.init((3,)), x)
    assert float(s.count) == 24
    np.testing.assert_allclose(s.mean, x.reshape(-1, 3).mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s.var, x.reshape(-1, 3).var(0), rtol=1e-5)
    with pytest.raises(ValueError, match="batch shape"):
        rs.update(rs.init((3,)), x[..., :2])
    with pytest.raises(ValueError, match="batch shape"):
        rs.update(rs.init((3,)), x[0, 0])  # no leading sample axis


def test_merge_counts_add_and_assoc_comm():
    rng = np.random.default_rng(2)
    a, b, c = (
        _fold(rs.init((2,)), _uneven_batches(rng, sizes, (2,), loc=loc))
        for sizes, loc in [([3, 5], -1.0), ([10], 4.0), ([1, 1, 2], 0.5)]
    )
    assert float(merge(a, b).count) == float(a.count) + float(b.count) == 18
    ab_c, a_bc = merge(merge(a, b), c), merge(a, merge(b, c))
    ba = merge(b, a)
    for x, y in [(ab_c, a_bc), (merge(a, b), ba)]:
        np.testing.assert_allclose(x.mean, y.mean, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(x.var, y.var, rtol=1e-5)
        assert float(x.count) == float(y.count)
    # Merging equals folding all the data into one stats.
    rng = np.random.default_rng(2)
    all_batches = sum(
        (_uneven_batches(rng, s, (2,), loc=lo) for s, lo in [([3, 5], -1.0), ([10], 4.0)]), []
    )
    data = np.concatenate(all_batches)
    ab = merge(a, b)
    np.testing.assert_allclose(ab.mean, data.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ab.var, data.var(0), rtol=1e-5)


def test_merge_with_empty_is_identity():
    rng = np.random.default_rng(3)
    a = update(rs.init((2,)), rng.normal(size=(5, 2)).astype(np.float32))
    empty = rs.init((2,))
    for m in [merge(a, empty), merge(empty, a)]:
        np.testing.assert_allclose(m.mean, a.mean, rtol=1e-6)
        np.testing.assert_allclose(m.var, a.var, rtol=1e-6)
        assert float(m.count) == 5
    both = merge(empty, empty)
    np.testing.assert_array_equal(both.var, 1.0)
    np.testing.assert_array_equal(both.mean, 0.0)
    assert float(both.count) == 0


def test_large_offset_is_stable():
    # Mean 1e4, std 1 in float32: a sum-of-squares formula loses the variance entirely here.
    rng = np.random.default_rng(4)
    batches = _uneven_batches(rng, [1, 3, 50, 7, 200, 1, 40], (), loc=1e4, scale=1.0)
    s = _fold(rs.init(()), batches)
    data = np.concatenate(batches).astype(np.float64)
    np.testing.assert_allclose(s.mean, data.mean(), rtol=1e-6)
    np.testing.assert_allclose(s.var, data.var(), rtol=1e-3)


def test_normalize_denormalize_roundtrip_and_clip():
    rng = np.random.default_rng(5)
    s = update(rs.init((3,)), (5.0 + 3.0 * rng.normal(size=(500, 3))).astype(np.float32))
    x = jnp.asarray(rng.normal(size=(4, 3)) * 10, jnp.float32)
    y = rs.normalize(s, x)
    np.testing.assert_allclose(y, (x - s.mean) / np.sqrt(s.var + 1e-8), rtol=1e-5)
    np.testing.assert_allclose(rs.denormalize(s, y), x, rtol=1e-5, atol=1e-4)
    # Normalised data has mean ~0 and std ~1 under its own statistics.
    data = (5.0 + 3.0 * rng.normal(size=(2000, 3))).astype(np.float32)
    s2 = update(rs.init((3,)), data)
    z = rs.normalize(s2, data)
    np.testing.assert_allclose(z.mean(0), 0.0, atol=1e-4)
    np.testing.assert_allclose(z.std(0), 1.0, rtol=1e-4)
    clipped = rs.normalize(s2, jnp.array([[1e3, -1e3, 5.0]]), clip=5.0)
    assert float(clipped.max()) == 5.0 and float(clipped.min()) == -5.0


def test_jit_and_vmap_independent_stats():
    # Per-seed statistics: vmap over a stack of stats and a stack of batches.
    rng = np.random.default_rng(6)
    S = 4
    batches = [(rng.normal(size=(S, n, 2)) + np.arange(S)[:, None, None]) for n in (3, 8, 1)]
    batches = [b.astype(np.float32) for b in batches]
    stats = jax.vmap(lambda _: rs.init((2,)))(jnp.arange(S))
    vupdate = jax.jit(jax.vmap(rs.update))
    for b in batches:
        stats = vupdate(stats, b)
    for i in range(S):
        data = np.concatenate([b[i] for b in batches])
        np.testing.assert_allclose(stats.mean[i], data.mean(0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(stats.var[i], data.var(0), rtol=1e-5)
    np.testing.assert_array_equal(stats.count, 12)
    merged = jax.jit(jax.vmap(rs.merge))(stats, stats)
    np.testing.assert_array_equal(merged.count, 24)
    np.testing.assert_allclose(merged.var, stats.var, rtol=1e-5)
    z = jax.vmap(rs.normalize)(stats, batches[0])
    np.testing.assert_allclose(jax.vmap(rs.denormalize)(stats, z), batches[0], atol=1e-5)


def test_init_refuses_a_count_dtype_that_overflows():
    with pytest.raises(ValueError, match="dtype must be float32 or float64, got float16"):
        rs.init((2,), jnp.float16)
