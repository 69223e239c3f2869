"""CQL (`rlsuite.agents.cql`): the conservative penalty and the Lagrange weight's loss against
values derived by hand, learning the probe and staying pessimistic away from the data, the
weight following the gap, bad input."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import cql, iql
from rlsuite.agents.learner import adam_init, adam_step
from rlsuite.loop import driver
from rlsuite.networks import QEnsemble
from rlsuite.ops import losses
from tests.agents.offline_probe import OBS, PROBE, train_jit


def test_cql_penalty_on_a_tiny_example():
    # Critic 0, three sampled actions per state ([K=2, M=3, B=2]):
    #   state 0: Q = [0, 0, log 2], log density = [log 1/2 (uniform on [-1, 1]), 0, 0]
    #            terms Q - log mu = [log 2, 0, log 2] -> logsumexp = log(2 + 1 + 2) = log 5;
    #            Q(data) = 1 -> log 5 - 1.
    #   state 1: Q = [1, 1, 1], log density = [log 1/2, log 2, log 2]
    #            terms = 1 + [log 2, -log 2, -log 2]
    #            -> logsumexp = 1 + log(2 + 1/2 + 1/2) = 1 + log 3;
    #            Q(data) = 0 -> 1 + log 3.
    #   penalty = mean = (log 5 - 1 + 1 + log 3) / 2 = log(15) / 2 = 1.354025;
    #   logsumexp term = (log 5 + 1 + log 3) / 2 = (log 15 + 1) / 2 = 1.854025.
    # Critic 1 is critic 0 plus 1 everywhere: the penalty is unchanged, the logsumexp 1 higher.
    log2 = math.log(2.0)
    q0 = jnp.array([[0.0, 1.0], [0.0, 1.0], [log2, 1.0]])  # [M, B]
    q_sampled = jnp.stack([q0, q0 + 1.0])
    log_density = jnp.array([[-log2, -log2], [0.0, log2], [0.0, log2]])
    q_data = jnp.array([[1.0, 0.0], [2.0, 1.0]])
    penalty, lse = jax.jit(losses.cql_penalty)(q_sampled, log_density, q_data)
    half_log15 = math.log(15.0) / 2
    np.testing.assert_allclose(penalty, [half_log15, half_log15], rtol=1e-6)
    np.testing.assert_allclose(lse, [half_log15 + 0.5, half_log15 + 1.5], rtol=1e-6)
    # Gradients of critic 0's penalty: Q(data) is pushed up by 1 / B = 0.5 per state; the
    # sampled Q down by softmax(terms) / B: state 0 softmax [2, 1, 2] / 5 -> [0.2, 0.1, 0.2];
    # state 1 softmax [2, 1/2, 1/2] / 3 -> [1/3, 1/12, 1/12]. The densities get no gradient.
    grads = jax.grad(lambda qs, ld, qd: losses.cql_penalty(qs, ld, qd)[0][0], argnums=(0, 1, 2))
    g_sampled, g_density, g_data = grads(q_sampled, log_density, q_data)
    np.testing.assert_allclose(g_data[0], [-0.5, -0.5], rtol=1e-6)
    np.testing.assert_allclose(
        g_sampled[0], [[0.2, 1 / 3], [0.1, 1 / 12], [0.2, 1 / 12]], rtol=1e-5
    )
    np.testing.assert_array_equal(g_sampled[1], 0.0)
    np.testing.assert_array_equal(g_density, 0.0)


def test_lagrange_weight_grows_while_the_penalty_exceeds_the_gap():
    # alpha' = exp(log 2) = 2. Penalty 3 (mean of [2, 4]) > gap 1: loss = -2 * (3 - 1) = -4, and
    # d loss / d log alpha' = -alpha' (penalty - gap) = -4 < 0, so a descent step raises alpha'.
    log_ap = jnp.log(2.0)
    loss, grad = jax.value_and_grad(losses.cql_lagrange_loss)(log_ap, jnp.array([2.0, 4.0]), 1.0)
    np.testing.assert_allclose([loss, grad], [-4.0, -4.0], rtol=1e-6)
    up, _ = adam_step(log_ap, grad, adam_init(log_ap), 0.1)
    # Penalty 0.5 < gap 1: loss = -2 * (0.5 - 1) = 1, gradient +1, alpha' shrinks.
    loss, grad = jax.value_and_grad(losses.cql_lagrange_loss)(log_ap, 0.5, 1.0)
    np.testing.assert_allclose([loss, grad], [1.0, 1.0], rtol=1e-6)
    down, _ = adam_step(log_ap, grad, adam_init(log_ap), 0.1)
    assert down < log_ap < up
    # exp(log 1e7) is clipped to 1e6: loss = -1e6 * (3 - 1).
    np.testing.assert_allclose(losses.cql_lagrange_loss(jnp.log(1e7), 3.0, 1.0), -2e6, rtol=1e-5)


def test_cql_learns_the_probe_and_is_pessimistic_away_from_the_data(narrow_data):
    env, params = envs.make(PROBE, continuous=True)
    config = cql.CQLConfig(
        num_updates=20,
        gradient_steps=100,
        batch_size=128,
        hidden_sizes=(32, 32),
        num_sampled_actions=5,
    )
    agent = cql.make(config, env, params)
    hp = cql.CQLHparams(actor_lr=1e-3, critic_lr=1e-3, alpha_lr=1e-3)  # alpha_cql = 5
    state, metrics = train_jit(agent, jax.random.key(0), hp, 20, data=narrow_data)
    assert np.isfinite(metrics["losses/cql_penalty"]).all()
    np.testing.assert_array_equal(metrics["losses/cql_weight"], 5.0)
    np.testing.assert_allclose(agent.act(state, OBS, jax.random.key(0), True), [[0.5]], atol=0.1)
    # No data near a = -1 (15 standard deviations away): the penalty pushes Q there far below its
    # true value -2.25 (to about -22). Trained without it (alpha_cql = 0) on the same data, the
    # critics extrapolated to between -0.5 and +0.4 there, and the greedy action landed between
    # -0.07 and 0.42 (3 seeds).
    critic = QEnsemble(config.hidden_sizes, config.num_critics, config.activation)
    q_far = critic.apply(state.learner.sac.critic, OBS, jnp.array([[-1.0]]))
    assert float(q_far.max()) < -2.25 - 1.0, q_far


def test_cql_lagrange_weight_follows_the_gap(narrow_data):
    # A fresh critic's penalty is a few nats (about log(N 2^d) = log 20 with a flat Q): above a
    # gap of 0 the weight alpha' grows from alpha_cql = 5, below a gap of 100 it shrinks. Two
    # runs vmapped over the hyperparameters.
    env, params = envs.make(PROBE, continuous=True)
    config = cql.CQLConfig(gradient_steps=10, batch_size=32, hidden_sizes=(8,), lagrange=True)
    agent = cql.make(config, env, params)
    hp = cql.CQLHparams(target_action_gap=jnp.array([0.0, 100.0]), alpha_prime_lr=1e-2)
    keys = jnp.stack([jax.random.key(0)] * 2)
    states = jax.jit(driver.init_batch, static_argnums=(0, 3))(agent, keys, hp, 0, narrow_data)
    run = jax.jit(driver.run_batch, static_argnums=(0, 3, 4))
    _, metrics = run(agent, states, hp, 5, 0, narrow_data)
    weight = np.asarray(metrics["losses/cql_weight"])  # [2 runs, 5 updates], mean per update
    assert (np.diff(weight[0]) > 0).all() and weight[0, -1] > 5.0, weight[0]
    assert (np.diff(weight[1]) < 0).all() and weight[1, -1] < 5.0, weight[1]
    assert (np.asarray(metrics["losses/cql_penalty"]) > 0).all()


def test_cql_bad_input_is_refused_with_the_field_named():
    env, params = envs.make(PROBE, continuous=True)
    with pytest.raises(TypeError, match="cql handles bounded 1-D Box"):
        cql.make(cql.CQLConfig(), *envs.make(PROBE))  # discrete actions
    with pytest.raises(ValueError, match="num_sampled_actions must be an integer >= 1"):
        cql.CQLConfig(num_sampled_actions=0)
    agent = cql.make(cql.CQLConfig(), env, params)
    agent.check_hparams(agent.default_hparams)
    agent.check_hparams(cql.CQLHparams(alpha_cql=0.0))  # fixed weight 0: offline SAC
    for field, value in [("critic_lr", -1.0), ("alpha_prime_lr", 0.0), ("alpha_cql", -1.0)]:
        with pytest.raises(ValueError, match=rf"cql: invalid hparams\.{field}"):
            agent.check_hparams(cql.CQLHparams(**{field: value}))
    lagrange = cql.make(cql.CQLConfig(lagrange=True), env, params)
    with pytest.raises(ValueError, match=r"cql: invalid hparams\.alpha_cql"):  # alpha' starts there
        lagrange.check_hparams(cql.CQLHparams(alpha_cql=0.0))
    with pytest.raises(TypeError, match="must be a CQLHparams"):
        agent.check_hparams(iql.IQLHparams())
