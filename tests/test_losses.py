"""Losses against values derived by hand."""

import jax
import jax.numpy as jnp
import numpy as np

from rlsuite import losses


def test_ppo_policy_loss_by_hand():
    # ratios exp(log 1.5) = 1.5 and exp(log 0.5) = 0.5, clip_eps = 0.2, advantages 1 and -2:
    #   sample 1: min(1.5 * 1, clip(1.5) = 1.2 * 1) = 1.2
    #   sample 2: min(0.5 * -2 = -1.0, clip(0.5) = 0.8 * -2 = -1.6) = -1.6
    # loss = -(1.2 - 1.6) / 2 = 0.2; both ratios are outside [0.8, 1.2]: clip fraction 1.
    # approx KL = mean((r - 1) - log r) = ((0.5 - log 1.5) + (-0.5 - log 0.5)) / 2
    log_prob = jnp.log(jnp.array([1.5, 0.5]))
    loss, metrics = losses.ppo_policy_loss(log_prob, jnp.zeros(2), jnp.array([1.0, -2.0]), 0.2)
    np.testing.assert_allclose(loss, 0.2, rtol=1e-6)
    assert float(metrics["clip_fraction"]) == 1.0
    expected_kl = ((0.5 - np.log(1.5)) + (-0.5 - np.log(0.5))) / 2
    np.testing.assert_allclose(metrics["approx_kl"], expected_kl, rtol=1e-6)


def test_ppo_policy_gradient_is_zero_when_clipped_and_improving():
    # A ratio of 1.5 with a positive advantage is clipped: no gradient pushes it further.
    grad = jax.grad(lambda lp: losses.ppo_policy_loss(lp, jnp.zeros(1), jnp.ones(1), 0.2)[0])
    np.testing.assert_allclose(grad(jnp.log(jnp.array([1.5]))), [0.0])
    # Inside the clip range the gradient of -r * A at r = 1 is -A.
    np.testing.assert_allclose(grad(jnp.zeros(1)), [-1.0])


def test_value_losses_by_hand():
    values, old, targets = jnp.array([1.0, 0.0]), jnp.array([0.0, 0.0]), jnp.array([3.0, -1.0])
    # unclipped: 0.5 * mean((1 - 3)^2, (0 + 1)^2) = 0.5 * (4 + 1) / 2 = 1.25
    np.testing.assert_allclose(losses.value_loss(values, targets), 1.25)
    # clipped at 0.5: sample 1: max((1 - 3)^2 = 4, (0.5 - 3)^2 = 6.25) = 6.25; sample 2: 1
    # 0.5 * (6.25 + 1) / 2 = 1.8125
    np.testing.assert_allclose(losses.clipped_value_loss(values, old, targets, 0.5), 1.8125)


def test_targets_get_no_gradient_and_advantages_normalise():
    grad = jax.grad(lambda t: losses.value_loss(jnp.zeros(2), t))(jnp.ones(2))
    np.testing.assert_array_equal(grad, [0.0, 0.0])
    adv = losses.normalize_advantages(jnp.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(adv, [-1.2247449, 0.0, 1.2247449], rtol=1e-5)
