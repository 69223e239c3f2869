"""SAC (`rlsuite.agents.sac`): one learning step against hand computations of its parts (the
soft TD target the critics regress onto, the temperature's Adam step and its direction, the
target critics' Polyak step), the fixed temperature without `autotune`, and a critic target
passed in as a research variant. The shared loop's tests (replay, probes, learning, seeds, bad
input) run SAC beside TD3 in `tests/agents/test_off_policy.py`."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from rlsuite.agents import sac
from rlsuite.ops import losses

OBS, DIM, BATCH = 3, 2, 8


def _setup(autotune=True, **learner_kwargs):
    config = sac.SACConfig(hidden_sizes=(8,), autotune=autotune)
    learner = sac.learner(config, (OBS,), DIM, **learner_kwargs)
    hp = sac.SACHparams(alpha=0.5, alpha_lr=0.01, tau=0.1, gamma=0.9)
    keys = jax.random.split(jax.random.key(0), 5)
    batch = {
        "obs": jax.random.normal(keys[0], (BATCH, OBS)),
        "action": jax.random.uniform(keys[1], (BATCH, DIM), minval=-1.0, maxval=1.0),
        "reward": jax.random.normal(keys[2], (BATCH,)),
        "discount": jnp.where(jnp.arange(BATCH) % 3 == 0, 0.0, 0.9),  # some terminal steps
        "next_obs": jax.random.normal(keys[3], (BATCH, OBS)),
    }
    return learner, learner.init(keys[4], hp), batch, hp


def test_the_temperature_takes_one_adam_step_towards_the_target_entropy():
    learner, state, batch, hp = _setup()
    after, metrics = jax.jit(learner.learn)(state, batch, jax.random.key(1), hp)
    # The loss is -log_alpha * E[log pi + target]; its gradient E[-(log pi + target)] = entropy -
    # target, whose sign decides the step: Adam's first step is lr * sign(grad), in log space.
    target = -hp.target_entropy_scale * DIM
    grad = float(metrics["entropy"]) - target
    expected = np.log(0.5) - hp.alpha_lr * np.sign(grad)
    np.testing.assert_allclose(float(after.log_alpha), expected, rtol=1e-5)
    np.testing.assert_allclose(float(metrics["alpha"]), 0.5, rtol=1e-6)  # the step's alpha
    np.testing.assert_allclose(
        float(metrics["alpha_loss"]), -np.log(0.5) * -grad, rtol=1e-5, atol=1e-6
    )


def test_without_autotune_the_temperature_stays_as_given():
    learner, state, batch, hp = _setup(autotune=False)
    after, metrics = jax.jit(learner.learn)(state, batch, jax.random.key(1), hp)
    assert float(after.log_alpha) == float(jnp.log(jnp.float32(0.5)))
    assert float(metrics["alpha_loss"]) == 0.0


def test_the_target_critics_take_a_polyak_step_of_tau():
    learner, state, batch, hp = _setup()
    after, _ = jax.jit(learner.learn)(state, batch, jax.random.key(1), hp)
    # The targets started equal to the critics: tau of the way to the new critics.
    for new, old, target in zip(
        jax.tree.leaves(after.critic),
        jax.tree.leaves(state.critic),
        jax.tree.leaves(after.target_critic),
        strict=True,
    ):
        np.testing.assert_allclose(target, 0.1 * new + 0.9 * old, rtol=1e-5, atol=1e-7)
    assert any(
        not np.array_equal(a, b)
        for a, b in zip(jax.tree.leaves(after.critic), jax.tree.leaves(state.critic), strict=True)
    )


def test_the_soft_td_target_by_hand():
    reward = jnp.array([1.0, -2.0])
    discount = jnp.array([0.9, 0.0])  # the second step terminal: no bootstrap
    next_q = jnp.array([[3.0, 5.0], [1.0, 4.0]])  # [K, B]: the smaller critic counts
    next_log_prob = jnp.array([-1.0, 2.0])
    y = losses.soft_td_target(reward, discount, next_q, next_log_prob, 0.5)
    # 1 + 0.9 * (min(3, 1) - 0.5 * -1) = 1 + 0.9 * 1.5 = 2.35; -2 + 0 = -2.
    np.testing.assert_allclose(y, [2.35, -2.0], rtol=1e-6)


def test_a_critic_target_passed_in_is_the_one_learned_towards():
    """A target of the reward alone makes the critics regress onto the rewards: after steps on
    one batch at a large step size, both critics' values at the batch's actions near them."""

    def reward_only(reward, discount, next_q, next_log_prob, alpha):
        return reward

    learner, state, batch, hp = _setup(critic_target=reward_only)
    hp = hp.replace(critic_lr=0.05)
    step = jax.jit(learner.learn)
    for i in range(300):
        state, metrics = step(state, batch, jax.random.key(i), hp)
    nets = learner.learn.args[0]  # (bound by learner.bind)
    q = nets.critic.apply(state.critic, batch["obs"], batch["action"])
    assert float(metrics["critic_loss"]) < 0.05
    np.testing.assert_allclose(q, np.broadcast_to(batch["reward"], q.shape), atol=0.3)


@pytest.mark.parametrize("field, value", [("alpha_lr", 0.0), ("alpha", -1.0), ("tau", 2.0)])
def test_bad_hparams_are_refused_naming_the_field(field, value):
    with pytest.raises(ValueError, match=rf"hparams\.{field}"):
        sac.check_hparams(sac.SACHparams(**{field: value}))


def test_the_optimiser_steps_match_optax_adam():
    """`adam_step` (the learner's traced step size) is optax's Adam: the actor's first step
    equals `optax.adam`'s on the same gradient."""
    from rlsuite.agents.learner import adam_init, adam_step

    params = {"w": jnp.array([1.0, -2.0, 3.0])}
    grads = {"w": jnp.array([0.5, -0.1, 0.0])}
    ours, _ = adam_step(params, grads, adam_init(params), 0.01)
    tx = optax.adam(0.01)
    updates, _ = tx.update(grads, tx.init(params), params)
    np.testing.assert_allclose(ours["w"], optax.apply_updates(params, updates)["w"], rtol=1e-6)
