"""IQL (`rlsuite.agents.iql`): its losses against values derived by hand (the expectile loss,
the advantage weights and their clip, the advantage-weighted policy loss), learning the
action-reward probe from uniform actions, the cosine actor step size, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import cql, iql
from rlsuite.loop import driver
from rlsuite.networks import MLP, QEnsemble
from rlsuite.ops import losses
from tests.agents.offline_probe import OBS, PROBE, SMALL, train_jit
from tests.trees import leaves_equal


def test_expectile_loss_weights_each_side_of_zero():
    # tau = 0.7: u = 1 > 0 weighs 0.7 * 1 = 0.7; u = -2 < 0 weighs 0.3 * 4 = 1.2; mean 0.95.
    diff = jnp.array([1.0, -2.0])
    np.testing.assert_allclose(losses.expectile_loss(diff, 0.7), 0.95, rtol=1e-6)
    # tau = 0.5 is half the mean squared error: 0.5 * (1 + 4) / 2 = 1.25.
    np.testing.assert_allclose(losses.expectile_loss(diff, 0.5), 1.25, rtol=1e-6)
    # Jitted, and vmapped over tau: 0.1 * 1 + 0.9 * 4 = 3.7 -> 1.85; 0.9 + 0.1 * 4 = 1.3 -> 0.65.
    batched = jax.jit(jax.vmap(losses.expectile_loss, in_axes=(None, 0)))(
        diff, jnp.array([0.1, 0.9])
    )
    np.testing.assert_allclose(batched, [1.85, 0.65], rtol=1e-6)


def test_expectile_loss_is_minimised_at_the_expectile():
    # Samples {0, 1} with tau = 0.7: d/dm [0.7 (1 - m)^2 + 0.3 m^2] = 0 at 0.7 (1 - m) = 0.3 m,
    # so m = 0.7 (the mean 0.5 would be tau = 0.5).
    x = jnp.array([0.0, 1.0])
    grad = jax.grad(lambda m: losses.expectile_loss(x - m, 0.7))
    np.testing.assert_allclose(grad(0.7), 0.0, atol=1e-6)
    assert grad(0.6) < 0 < grad(0.8)


def test_advantage_weights_and_their_clip():
    # beta = 2: exp(-2) = 0.135335, exp(0) = 1, exp(1) = 2.718282, exp(4) = 54.6 -> clipped at 10.
    adv = jnp.array([-1.0, 0.0, 0.5, 2.0])
    w = losses.advantage_weights(adv, 2.0, 10.0)
    np.testing.assert_allclose(w, [0.135335, 1.0, 2.718282, 10.0], rtol=1e-5)
    # A huge advantage is clipped, not infinite; and no gradient flows through the weights.
    assert losses.advantage_weights(jnp.array([1e4]), 3.0, 100.0)[0] == pytest.approx(100.0)
    grad = jax.grad(lambda a: losses.advantage_weights(a, 2.0, 10.0).sum())(adv)
    np.testing.assert_array_equal(grad, 0.0)


def test_awr_policy_loss():
    # -(2 * -1 + 0.5 * -2) / 2 = 1.5; d/dlog_prob = -w / B = [-1, -0.25]; weights are constants.
    log_prob, weights = jnp.array([-1.0, -2.0]), jnp.array([2.0, 0.5])
    np.testing.assert_allclose(losses.awr_policy_loss(log_prob, weights), 1.5, rtol=1e-6)
    g_log_prob, g_weights = jax.grad(losses.awr_policy_loss, argnums=(0, 1))(log_prob, weights)
    np.testing.assert_allclose(g_log_prob, [-1.0, -0.25], rtol=1e-6)
    np.testing.assert_array_equal(g_weights, 0.0)


def test_iql_learns_the_probe_from_uniform_actions(uniform_data):
    env, params = envs.make(PROBE, continuous=True)
    config = iql.IQLConfig(num_updates=30, gradient_steps=100, hidden_sizes=(32, 32))
    agent = iql.make(config, env, params)
    # beta = 10: the policy fits the dataset's actions weighted by exp(10 (Q - V)), i.e. uniform
    # actions times exp(-10 (a - 0.5)^2): N(0.5, 1/20) truncated to [-1, 1], whose mean is
    # 0.5 - 0.224 * phi(2.24) / Phi(2.24) = 0.493 (beta = 3 would give 0.41) and whose
    # standard deviation is about 0.21.
    hp = iql.IQLHparams(actor_lr=1e-3, critic_lr=1e-3, value_lr=1e-3, beta=10.0)
    state, metrics = train_jit(agent, jax.random.key(0), hp, 30, data=uniform_data)
    assert np.isfinite(metrics["losses/critic_loss"]).all()
    np.testing.assert_allclose(agent.act(state, OBS, jax.random.key(0), True), [[0.5]], atol=0.1)
    std = float(jnp.exp(state.learner.actor["params"]["log_std"][0]))
    assert 0.12 < std < 0.35, std
    # One-step episodes: Q(0, a) = r(a) = -(a - 0.5)^2 and V(0) = the 0.7-expectile of the
    # dataset's rewards (the fixed point of m = sum w r / sum w, w = 0.7 above m, 0.3 below).
    rewards = np.asarray(uniform_data.rewards, np.float64)
    expectile = rewards.mean()
    for _ in range(100):
        w = np.where(rewards > expectile, 0.7, 0.3)
        expectile = (w * rewards).sum() / w.sum()
    value = MLP(config.hidden_sizes, 1, config.activation).apply(state.learner.value, OBS)
    np.testing.assert_allclose(value[0, 0], expectile, atol=0.05)  # about -0.37
    actions = jnp.array([[-1.0], [0.0], [0.5], [1.0]])
    critic = QEnsemble(config.hidden_sizes, 2, config.activation)
    q = critic.apply(state.learner.critic, jnp.zeros((4, 1)), actions)
    np.testing.assert_allclose(q, [[-2.25, -0.25, 0.0, -0.25]] * 2, atol=0.05)


def test_iql_cosine_actor_lr_ends_at_zero(uniform_data):
    # The schedule spans num_updates * gradient_steps = 10 steps: its step size is 0 from step
    # 10 on, so a third update leaves the actor as it was while the critics go on learning.
    config = iql.IQLConfig(**{**SMALL, "num_updates": 2}, cosine_actor_lr=True)
    agent = iql.make(config, *envs.make(PROBE, continuous=True))
    hp = agent.default_hparams
    state, _ = train_jit(agent, jax.random.key(0), hp, 2, data=uniform_data)
    more, _ = jax.jit(driver.run, static_argnums=(0, 3))(agent, state, hp, 1, uniform_data)
    assert int(more.learner.step) == 15
    assert leaves_equal(state.learner.actor, more.learner.actor)
    assert not leaves_equal(state.learner.critic, more.learner.critic)


def test_iql_bad_input_is_refused_with_the_field_named():
    env, params = envs.make(PROBE, continuous=True)
    with pytest.raises(TypeError, match="iql handles bounded 1-D Box"):
        iql.make(iql.IQLConfig(), *envs.make(PROBE))  # discrete actions
    with pytest.raises(TypeError, match="needs an IQLConfig"):
        iql.make(cql.CQLConfig(), env, params)
    agent = iql.make(iql.IQLConfig(), env, params)
    agent.check_hparams(agent.default_hparams)
    for field, value in [("actor_lr", -1e-3), ("value_lr", 0.0), ("gamma", 1.5), ("beta", -1.0)]:
        with pytest.raises(ValueError, match=rf"iql: invalid hparams\.{field}"):
            agent.check_hparams(iql.IQLHparams(**{field: value}))
    for value in (0.0, 1.0, 1.5, -0.2):
        with pytest.raises(ValueError, match=r"expectile=.*\(0, 1\)"):
            agent.check_hparams(iql.IQLHparams(expectile=value))
    with pytest.raises(ValueError, match="gradient_steps must be an integer >= 1"):
        iql.IQLConfig(gradient_steps=0)
    with pytest.raises(ValueError, match="IQLConfig.hidden_sizes must be a non-empty sequence"):
        iql.IQLConfig(hidden_sizes=[])
    assert iql.IQLConfig(hidden_sizes=[8, 8]).hidden_sizes == (8, 8)
