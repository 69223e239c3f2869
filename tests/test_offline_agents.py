"""IQL and CQL: their losses against values derived by hand, short learning runs on datasets of a
probe environment, the Lagrange weight's direction, seeds, bad input."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import bc, cql, iql, offline, td3_bc
from rlsuite.agents.learner import adam_init, adam_step
from rlsuite.data.datasets import DatasetInfo, from_transitions, sample
from rlsuite.loop import driver
from rlsuite.loop.rollout import reset_batch, rollout
from rlsuite.networks import MLP, QEnsemble
from rlsuite.ops import losses
from tests.trees import leaves_equal

PROBE = "probe/action_reward"  # one-step episodes, obs 0, reward -(a - 0.5)^2, a in [-1, 1]
train_jit = jax.jit(driver.train, static_argnums=(0, 3))
OBS = jnp.zeros((1, 1))
SMALL = {"num_updates": 4, "gradient_steps": 5, "batch_size": 16, "hidden_sizes": (8,)}


def probe_dataset(behaviour, key, num_envs=8, steps=250):
    """2,000 transitions of the continuous action-reward probe under `behaviour(key, shape)`."""
    env, params = envs.make(PROBE, continuous=True)
    key_reset, key_rollout = jax.random.split(key)
    batch = reset_batch(env, params, key_reset, num_envs)
    _, tr = rollout(
        env, params, lambda k, obs: (behaviour(k, (num_envs, 1)), {}), key_rollout, batch, steps
    )
    return from_transitions(tr, DatasetInfo(env=PROBE, quality="probe", algo="scripted"))


@pytest.fixture(scope="module")
def uniform_data():
    def uniform(key, shape):
        return jax.random.uniform(key, shape, minval=-1.0, maxval=1.0)

    return probe_dataset(uniform, jax.random.key(0))


@pytest.fixture(scope="module")
def narrow_data():
    # 0.5 + N(0, 0.1^2): 5 or more standard deviations inside the bounds [-1, 1].
    return probe_dataset(
        lambda key, shape: 0.5 + 0.1 * jax.random.normal(key, shape), jax.random.key(1)
    )


# ------------------------------------------------------------------------------------- losses
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


# -------------------------------------------------------------------------------------- IQL
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


# -------------------------------------------------------------------------------------- CQL
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


# ------------------------------------------------------------------------------------- seeds


@pytest.mark.parametrize(
    "algo", [(iql, iql.IQLConfig(**SMALL)), (cql, cql.CQLConfig(**SMALL, lagrange=True))]
)
def test_same_key_same_run_different_key_different_run(algo, uniform_data):
    module, config = algo
    agent = module.make(config, *envs.make(PROBE, continuous=True))
    hp = agent.default_hparams
    a, ma = train_jit(agent, jax.random.key(0), hp, 4, data=uniform_data)
    b, mb = train_jit(agent, jax.random.key(0), hp, 4, data=uniform_data)
    c, mc = train_jit(agent, jax.random.key(1), hp, 4, data=uniform_data)
    assert leaves_equal(a, b) and leaves_equal(ma, mb)
    assert not np.allclose(ma["losses/critic_loss"], mc["losses/critic_loss"])


# --------------------------------------------------------------------------------- bad input
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


def test_td3_bc_critics_learn_the_scaled_reward(uniform_data):
    # TD3's hparams.reward_scale reaches TD3+BC (and CQL, through SAC's): one-step episodes,
    # so Q(0, a) = 2 r(a) = -2 (a - 0.5)^2 with reward_scale = 2.
    env, params = envs.make(PROBE, continuous=True)
    config = td3_bc.TD3BCConfig(num_updates=30, gradient_steps=100, hidden_sizes=(32, 32))
    agent = td3_bc.make(config, env, params)
    hp = td3_bc.TD3BCHparams(actor_lr=1e-3, critic_lr=1e-3, reward_scale=2.0)
    state, _ = train_jit(agent, jax.random.key(0), hp, 30, data=uniform_data)
    actions = jnp.array([[-1.0], [0.0], [0.5], [1.0]])
    critic = QEnsemble(config.hidden_sizes, 2, config.activation)
    q = critic.apply(state.learner.critic, jnp.zeros((4, 1)), actions)
    np.testing.assert_allclose(q, [[-4.5, -0.5, 0.0, -0.5]] * 2, atol=0.1)


def test_observation_statistics_are_the_datasets_with_a_floored_std(uniform_data):
    # The probe's observations are all 0: variance 0, so the divisor is its floor, 1e-3 (an
    # observation of 1 in evaluation is 1,000, not the 1e4 of a floor of 1e-4).
    env, params = envs.make(PROBE, continuous=True)
    config = td3_bc.TD3BCConfig(normalize_observations=True, **{**SMALL, "gradient_steps": 4})
    agent = td3_bc.make(config, env, params)
    hp = agent.default_hparams
    stats = agent.init(jax.random.key(0), hp, uniform_data).obs_stats
    assert float(stats.mean[0]) == 0.0 and float(stats.var[0]) == 0.0
    np.testing.assert_allclose(offline.standardize(stats, jnp.ones((1,))), [1000.0], rtol=1e-6)
    # Otherwise the dataset's mean and (population) variance.
    obs = 3.0 * jax.random.normal(jax.random.key(1), uniform_data.observations.shape) + 1.0
    shifted = dataclasses.replace(uniform_data, observations=obs, next_observations=obs)
    stats = agent.init(jax.random.key(0), hp, shifted).obs_stats
    np.testing.assert_allclose(stats.mean, np.mean(np.asarray(obs), 0), rtol=1e-5)
    np.testing.assert_allclose(stats.var, np.var(np.asarray(obs), 0), rtol=1e-4)
    x = jnp.array([[4.0]])
    expected = (4.0 - np.mean(np.asarray(obs))) / np.sqrt(np.var(np.asarray(obs)) + 1e-6)
    np.testing.assert_allclose(offline.standardize(stats, x), [[expected]], rtol=1e-4)


def test_td3_bc_updates_hold_whole_policy_delay_cycles():
    env, params = envs.make("pendulum")
    with pytest.raises(ValueError, match=r"TD3BCConfig.gradient_steps=3 must be a multiple"):
        td3_bc.make(td3_bc.TD3BCConfig(gradient_steps=3), env, params)
    agent = td3_bc.make(td3_bc.TD3BCConfig(gradient_steps=6, policy_delay=3), env, params)
    assert agent.env_steps_per_update == 6


@pytest.mark.parametrize(
    "module, config_cls, scaled, discounted",
    [
        (bc, "BCConfig", False, False),  # no TD target: raw rewards, no discount
        (td3_bc, "TD3BCConfig", True, True),
        (cql, "CQLConfig", True, True),
        (iql, "IQLConfig", False, True),  # IQL scales no rewards
    ],
)
def test_each_family_declares_what_its_batches_make_of_the_rewards(
    module, config_cls, scaled, discounted, uniform_data
):
    env, params = envs.make(PROBE, continuous=True)
    config = getattr(module, config_cls)(**{**SMALL, "gradient_steps": 4})
    agent = module.make(config, env, params)
    hp = agent.default_hparams
    hp = hp.replace(**{k: v for k, v in (("gamma", 0.9), ("reward_scale", 3.0)) if hasattr(hp, k)})
    setup = agent.init.args[0]  # (bound by loop.agent.bind)
    assert isinstance(setup.rewards, offline.Rewards)
    stats = agent.init(jax.random.key(0), hp, uniform_data).obs_stats
    key = jax.random.key(7)
    batch = offline.batch_from(setup, uniform_data, stats, key, hp)
    raw = sample(uniform_data, key, SMALL["batch_size"])
    rewards = np.asarray(raw["rewards"], np.float32)
    np.testing.assert_array_equal(batch["reward"], rewards * 3.0 if scaled else rewards)
    if discounted:
        expected = np.float32(0.9) * (1.0 - np.asarray(raw["terminals"], np.float32))
        np.testing.assert_array_equal(batch["discount"], expected)
    else:
        assert "discount" not in batch
