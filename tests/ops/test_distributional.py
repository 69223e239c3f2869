"""Distributional value learning (`rlsuite.ops.distributional`): C51's projection by hand (mass
and atoms, a terminal and a truncated step, values past the support, mass conserved), its target
and loss against rlax's `categorical_q_learning`, and the quantile Huber loss by hand and against
rlax's `quantile_regression_loss`."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite.ops import distributional as dist

rlax = pytest.importorskip("rlax")

ATOMS = jnp.array([-1.0, 0.0, 1.0])
NEXT = jnp.array([0.2, 0.5, 0.3])


def test_the_support_and_its_refusals():
    np.testing.assert_allclose(dist.support(5, -10.0, 10.0), [-10.0, -5.0, 0.0, 5.0, 10.0])
    for n, lo, hi in [(1, 0.0, 1.0), (3, 1.0, 1.0), (3, 2.0, -2.0)]:
        with pytest.raises(ValueError, match="num_atoms=.* must be >= 2 and v_min=.* < v_max"):
            dist.support(n, lo, hi)


def test_the_projection_by_hand():
    # r = 0.5, discount 1: the atoms move to -0.5, 0.5 and 1.5 (clipped to 1). -0.5 splits its
    # 0.2 evenly between -1 and 0, 0.5 its 0.5 between 0 and 1, and 1 keeps its 0.3.
    target = dist.categorical_target(jnp.array([0.5]), jnp.array([1.0]), NEXT[None], ATOMS)
    np.testing.assert_allclose(target, [[0.1, 0.35, 0.55]], rtol=1e-6)
    # A terminal step (discount 0): all the mass at the reward, 0.5, split between 0 and 1.
    terminal = dist.categorical_target(jnp.array([0.5]), jnp.array([0.0]), NEXT[None], ATOMS)
    np.testing.assert_allclose(terminal, [[0.0, 0.5, 0.5]], atol=1e-7)
    # A truncated step bootstraps like any other (discount gamma): r = 0, gamma 0.5 moves the
    # atoms to -0.5, 0 and 0.5: 0.1 to -1, 0.1 + 0.5 + 0.15 to 0, 0.15 to 1.
    truncated = dist.categorical_target(jnp.array([0.0]), jnp.array([0.5]), NEXT[None], ATOMS)
    np.testing.assert_allclose(truncated, [[0.1, 0.75, 0.15]], rtol=1e-6)
    # Values past the support go to its ends; a value on an atom keeps its mass there.
    far = dist.categorical_projection(ATOMS, jnp.array([0.4, 0.6]), jnp.array([-7.0, 0.0]))
    np.testing.assert_allclose(far, [0.4, 0.6, 0.0], atol=1e-7)


def test_the_projection_conserves_mass_and_has_no_gradient_to_the_target():
    key = jax.random.key(0)
    atoms = dist.support(51, -10.0, 10.0)
    probs = jax.nn.softmax(jax.random.normal(key, (64, 51)), axis=-1)
    reward = 5.0 * jax.random.normal(jax.random.key(1), (64,))
    discount = jnp.where(jnp.arange(64) % 4 == 0, 0.0, 0.99)
    target = dist.categorical_target(reward, discount, probs, atoms)
    np.testing.assert_allclose(target.sum(-1), 1.0, rtol=1e-5)
    assert float(target.min()) >= 0.0
    grad = jax.grad(lambda p: dist.categorical_target(reward, discount, p, atoms).sum())(probs)
    np.testing.assert_array_equal(grad, 0.0)


def test_categorical_target_and_loss_equal_rlax_categorical_q_learning():
    key = jax.random.split(jax.random.key(2), 4)
    atoms = dist.support(11, -5.0, 5.0)
    logits_tm1 = jax.random.normal(key[0], (32, 4, 11))
    logits_t = jax.random.normal(key[1], (32, 4, 11))
    action = jax.random.randint(key[2], (32,), 0, 4)
    reward = 2.0 * jax.random.normal(key[3], (32,))
    discount = jnp.where(jnp.arange(32) % 5 == 0, 0.0, 0.9)
    # Ours: the next state's greedy action by its expected value, its distribution projected.
    probs_t = jax.nn.softmax(logits_t, axis=-1)
    greedy = jnp.argmax((probs_t * atoms).sum(-1), axis=-1)
    target = dist.categorical_target(reward, discount, probs_t[jnp.arange(32), greedy], atoms)
    ours = dist.categorical_loss(logits_tm1[jnp.arange(32), action], target)
    theirs = jax.vmap(rlax.categorical_q_learning, in_axes=(None, 0, 0, 0, 0, None, 0))(
        atoms, logits_tm1, action, reward, discount, atoms, logits_t
    )
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)  # item by item


def test_quantile_huber_loss_by_hand_and_against_rlax():
    # One prediction at tau 0.25 of value 0, targets 2 and -1 (kappa 1): u = 2 weighs 0.25 and
    # Huber(2) = 2 - 0.5 = 1.5; u = -1 weighs 0.75 and Huber(-1) = 0.5: 0.375 each, mean 0.375.
    got = dist.quantile_huber_loss(jnp.zeros((1, 1)), jnp.array([0.25]), jnp.array([[2.0, -1.0]]))
    np.testing.assert_allclose(got, 0.375, rtol=1e-6)
    key = jax.random.split(jax.random.key(3), 2)
    quantiles = jax.random.normal(key[0], (16, 8))
    targets = 2.0 * jax.random.normal(key[1], (16, 12))
    taus = dist.quantile_midpoints(8)
    np.testing.assert_allclose(taus, (2 * np.arange(8) + 1) / 16)
    for kappa in (0.0, 1.0, 2.0):
        ours = dist.quantile_huber_loss(quantiles, taus, targets, kappa)
        theirs = jax.vmap(rlax.quantile_regression_loss, in_axes=(0, None, 0, None))(
            quantiles, taus, targets, kappa
        )  # item by item
        scale = kappa if kappa > 0 else 1.0  # QR-DQN's rho divides the Huber loss by kappa
        np.testing.assert_allclose(ours, theirs / scale, rtol=1e-5)
    # Per-sample fractions (IQN's) broadcast the same way as shared ones.
    shared = dist.quantile_huber_loss(quantiles, taus, targets)
    tiled = dist.quantile_huber_loss(quantiles, jnp.tile(taus, (16, 1)), targets)
    np.testing.assert_allclose(shared, tiled, rtol=1e-6)
    # The gradient pulls each quantile towards its fraction of the targets: at the median of
    # one target it is 0 only at the target.
    one = jnp.array([[1.0]])
    grad = jax.grad(lambda q: dist.quantile_huber_loss(q, jnp.array([0.5]), one).sum())
    assert float(grad(jnp.array([[0.0]]))[0, 0]) < 0 < float(grad(jnp.array([[2.0]]))[0, 0])
    assert float(grad(jnp.array([[1.0]]))[0, 0]) == 0.0
