"""Losses against values derived by hand."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite.ops import losses


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


# ------------------------------------------------------------------------ off-policy (SAC, TD3)
def test_soft_td_target_by_hand():
    # alpha = 0.5, two critics next_q [K=2, B=3]:
    #   item 0: min(4, 6) = 4 (critic 0); soft value 4 - 0.5 * (-1) = 4.5; y = 1 + 0.5 * 4.5 = 3.25
    #   item 1: terminal, discount 0: y = r = 2 (its soft value min(10, -3) - 0.5 * 2 = -4 unused)
    #   item 2: min(8, 4) = 4 (critic 1); soft value 4 - 0.5 * 2 = 3; y = -1 + 0.25 * 3 = -0.25
    reward, discount = jnp.array([1.0, 2.0, -1.0]), jnp.array([0.5, 0.0, 0.25])
    next_q = jnp.array([[4.0, 10.0, 8.0], [6.0, -3.0, 4.0]])
    next_log_prob = jnp.array([-1.0, 2.0, 2.0])
    for fn in (losses.soft_td_target, jax.jit(losses.soft_td_target)):
        y = fn(reward, discount, next_q, next_log_prob, 0.5)
        np.testing.assert_array_equal(y, [3.25, 2.0, -0.25])
    # alpha = 0 is the plain clipped double-Q target.
    np.testing.assert_array_equal(
        losses.soft_td_target(reward, discount, next_q, next_log_prob, 0.0),
        losses.td_target(reward, discount, next_q),
    )
    # The target is a constant for the critic update: no gradient into any input.
    grads = jax.grad(
        lambda q, lp, a: losses.soft_td_target(reward, discount, q, lp, a).sum(), argnums=(0, 1, 2)
    )(next_q, next_log_prob, 0.5)
    for g in grads:
        np.testing.assert_array_equal(g, np.zeros_like(g))


def test_soft_td_target_against_numpy():
    rng = np.random.default_rng(0)
    for K in (2, 3):
        r, d, lp = (rng.normal(size=6).astype(np.float32) for _ in range(3))
        d = np.abs(d) * (rng.random(6) < 0.7)  # some terminal items
        q = rng.normal(size=(K, 6)).astype(np.float32)
        expected = r + d * (np.min(q, axis=0) - 0.3 * lp)
        np.testing.assert_allclose(losses.soft_td_target(r, d, q, lp, 0.3), expected, rtol=1e-6)


def test_td_target_by_hand():
    # item 0: 1 + 0.5 * min(4, 6) = 3;  item 1: terminal, y = 2
    # item 2: -1 + 0.25 * min(8, -4) = -2
    reward, discount = jnp.array([1.0, 2.0, -1.0]), jnp.array([0.5, 0.0, 0.25])
    next_q = jnp.array([[4.0, 7.0, 8.0], [6.0, 1.0, -4.0]])
    for fn in (losses.td_target, jax.jit(losses.td_target)):
        np.testing.assert_array_equal(fn(reward, discount, next_q), [3.0, 2.0, -2.0])
    grad = jax.grad(lambda q: losses.td_target(reward, discount, q).sum())(next_q)
    np.testing.assert_array_equal(grad, np.zeros((2, 3)))


def test_temperature_loss_value_and_gradient_sign():
    # log_alpha = 0.5, target entropy -1.
    # Entropy above target: log pi = [-1, -3] (entropy estimate 2 > -1);
    #   log pi + target = [-2, -4], mean -3; loss = -(0.5 * -3) = 1.5
    #   d loss / d log_alpha = -mean(log pi + target) = 3 > 0: descent lowers alpha.
    # Entropy below target: log pi = [1, 3] (entropy estimate -2 < -1);
    #   log pi + target = [0, 2], mean 1; loss = -0.5; gradient -1 < 0: descent raises alpha.
    loss = jax.jit(losses.temperature_loss)
    grad = jax.jit(jax.grad(losses.temperature_loss))
    above, below = jnp.array([-1.0, -3.0]), jnp.array([1.0, 3.0])
    np.testing.assert_array_equal(loss(0.5, above, -1.0), 1.5)
    np.testing.assert_array_equal(grad(0.5, above, -1.0), 3.0)
    np.testing.assert_array_equal(loss(0.5, below, -1.0), -0.5)
    np.testing.assert_array_equal(grad(0.5, below, -1.0), -1.0)
    # The log-probabilities are data here: no gradient flows into the policy.
    g = jax.grad(losses.temperature_loss, argnums=1)(0.5, above, -1.0)
    np.testing.assert_array_equal(g, [0.0, 0.0])


def test_sac_actor_loss_by_hand():
    # q [K=2, B=2] = [[1, 5], [3, 2]]: min over critics [1 (critic 0), 2 (critic 1)].
    # alpha = 0.2, log pi = [-1, 0.5]:
    #   item 0: 0.2 * -1 - 1 = -1.2;  item 1: 0.2 * 0.5 - 2 = -1.9;  loss = -3.1 / 2 = -1.55
    # d/dq = -1/B at the minimising critic of each item, 0 elsewhere; d/dlog pi = alpha / B = 0.1;
    # d/dalpha = 0 (alpha is held fixed in the actor update).
    q, log_prob = jnp.array([[1.0, 5.0], [3.0, 2.0]]), jnp.array([-1.0, 0.5])
    np.testing.assert_allclose(jax.jit(losses.sac_actor_loss)(q, log_prob, 0.2), -1.55, rtol=1e-6)
    dq, dlp, dalpha = jax.grad(losses.sac_actor_loss, argnums=(0, 1, 2))(q, log_prob, 0.2)
    np.testing.assert_array_equal(dq, [[-0.5, 0.0], [0.0, -0.5]])
    np.testing.assert_allclose(dlp, [0.1, 0.1], rtol=1e-6)
    assert float(dalpha) == 0.0


def test_smoothed_target_action_clips():
    # noise_clip c = 0.5, action bounds [-1, 1]; every value a dyadic fraction (exact):
    #   none binds:           0.5   + 0.25            =  0.75
    #   noise clip (+) binds: 0.25  + clip(0.75) 0.5  =  0.75   (unclipped noise would give 1.0)
    #   noise clip (-) binds: 0.25  + clip(-2) -0.5   = -0.25   (unclipped: -1.75 -> -1)
    #   action clip (+):      0.75  + 0.375 = 1.125   ->  1.0
    #   action clip (-):     -0.75  - 0.375 = -1.125  -> -1.0
    #   both bind:           -0.875 + clip(-3) -0.5 = -1.375 -> -1.0
    target = jnp.array([0.5, 0.25, 0.25, 0.75, -0.75, -0.875])
    noise = jnp.array([0.25, 0.75, -2.0, 0.375, -0.375, -3.0])
    expected = [0.75, 0.75, -0.25, 1.0, -1.0, -1.0]
    for fn in (losses.smoothed_target_action, jax.jit(losses.smoothed_target_action)):
        np.testing.assert_array_equal(fn(target, noise, 0.5), expected)
    # Other bounds [-2, 0.5]: 0.25 + 0.5 = 0.75 -> 0.5; -0.875 - 0.5 = -1.375 stays inside.
    out = losses.smoothed_target_action(
        jnp.array([0.25, -0.875]), jnp.array([0.75, -3.0]), 0.5, low=-2.0, high=0.5
    )
    np.testing.assert_array_equal(out, [0.5, -1.375])


def test_critic_loss_by_hand():
    # q [K=2, B=2] = [[1, 2], [0, 4]], targets [2, 2]:
    #   critic 0: errors (-1, 0), mean square 0.5;  critic 1: errors (-2, 2), mean square 4
    #   loss = 0.5 * (0.5 + 4) = 2.25;  d/dq = (q - y) / B = [[-0.5, 0], [-1, 1]]
    q, y = jnp.array([[1.0, 2.0], [0.0, 4.0]]), jnp.array([2.0, 2.0])
    np.testing.assert_array_equal(jax.jit(losses.critic_loss)(q, y), 2.25)
    dq, dy = jax.grad(losses.critic_loss, argnums=(0, 1))(q, y)
    np.testing.assert_array_equal(dq, [[-0.5, 0.0], [-1.0, 1.0]])
    np.testing.assert_array_equal(dy, [0.0, 0.0])  # targets get no gradient


def test_deterministic_actor_loss_uses_first_critic():
    # -mean(q[0]) = -(1 + 3) / 2 = -2; critic 1 (much lower) is ignored.
    q = jnp.array([[1.0, 3.0], [-10.0, -20.0]])
    np.testing.assert_array_equal(jax.jit(losses.deterministic_actor_loss)(q), -2.0)
    grad = jax.grad(losses.deterministic_actor_loss)(q)
    np.testing.assert_array_equal(grad, [[-0.5, -0.5], [0.0, 0.0]])


OFF_POLICY = {
    # name: (function of arrays only, the shape kind of each argument: [K, B], [B] or scalar)
    "critic_loss": (lambda q, y: losses.critic_loss(q, y), ("kb", "b")),
    "soft_td_target": (
        lambda r, d, q, lp: losses.soft_td_target(r, d, q, lp, 0.2),
        ("b", "b", "kb", "b"),
    ),
    "sac_actor_loss": (lambda q, lp: losses.sac_actor_loss(q, lp, 0.2), ("kb", "b")),
    "temperature_loss": (lambda la, lp: losses.temperature_loss(la, lp, -1.0), ("", "b")),
    "smoothed_target_action": (lambda a, n: losses.smoothed_target_action(a, n, 0.5), ("b", "b")),
    "td_target": (lambda r, d, q: losses.td_target(r, d, q), ("b", "b", "kb")),
    "deterministic_actor_loss": (lambda q: losses.deterministic_actor_loss(q), ("kb",)),
}


@pytest.mark.parametrize("name", sorted(OFF_POLICY))
def test_off_policy_losses_jit_and_vmap(name):
    # A stack of S independent problems: vmap (under jit) equals the per-problem eager calls.
    fn, kinds = OFF_POLICY[name]
    shapes = {"kb": (2, 5), "b": (5,), "": ()}
    rng = np.random.default_rng(1)
    S = 3
    args = [jnp.asarray(rng.normal(size=(S, *shapes[k])), jnp.float32) for k in kinds]
    expected = np.stack([fn(*(a[s] for a in args)) for s in range(S)])
    np.testing.assert_allclose(jax.jit(jax.vmap(fn))(*args), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(jax.jit(fn)(*(a[0] for a in args)), expected[0], rtol=1e-6)


def test_mismatched_shapes_are_refused_not_broadcast():
    # [B] against [B, 1] would broadcast to [B, B]: value_loss would be 0.667 for equal values.
    b, b1 = jnp.arange(3.0), jnp.arange(3.0)[:, None]
    cases = [
        (lambda: losses.value_loss(b, b1), r"value_loss: values \(3,\), targets \(3, 1\)"),
        (lambda: losses.clipped_value_loss(b, b, b1, 0.2), "clipped_value_loss"),
        (lambda: losses.ppo_policy_loss(b, b, b1, 0.2), "ppo_policy_loss"),
        (lambda: losses.critic_loss(jnp.stack([b, b]), b1), r"q\[k\] \(3,\), targets \(3, 1\)"),
        (lambda: losses.td_target(b, b1, jnp.stack([b, b])), "td_target"),
        (lambda: losses.soft_td_target(b, b, jnp.stack([b, b]), b1, 0.1), "soft_td_target"),
        (lambda: losses.sac_actor_loss(jnp.stack([b, b]), b1, 0.1), "sac_actor_loss"),
        (lambda: losses.awr_policy_loss(b, b1), "awr_policy_loss"),
        (lambda: losses.behavior_cloning_loss(b1, b), "behavior_cloning_loss"),
        (
            lambda: losses.cql_penalty(jnp.zeros((2, 4, 3)), jnp.zeros((4, 1)), jnp.zeros((2, 3))),
            r"cql_penalty: q_sampled \(4, 3\), log_density \(4, 1\)",
        ),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()
    assert losses.value_loss(b, b) == 0.0
