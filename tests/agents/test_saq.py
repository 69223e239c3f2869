"""SAQ (`rlsuite.agents.saq`): the quantisation, the VQ-VAE's loss with its straight-through
gradient and the exact discrete CQL penalty by hand; the two phases of one learner; the
probe's best action learned over codes the VQ-VAE spread across the dataset's actions; bad input
refused by name. Learning above BC on a
medium-replay dataset: `tests/topics/test_offline_end_to_end.py` (slow)."""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import iql, saq
from rlsuite.loop import driver
from tests.agents.offline_probe import OBS, PROBE, SMALL, train_jit
from tests.trees import leaves_equal


def test_quantize_picks_the_nearest_code_by_hand():
    codebook = jnp.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    # squared distances: (0.37, 0.17, 3.97), (1.48, 2.08, 0.68), (2, 5, 10), (0.25, 0.25, 4.25)
    z = jnp.array([[0.6, 0.1], [0.2, 1.2], [-1.0, -1.0], [0.5, 0.0]])
    index, e = saq.quantize(z, codebook)
    np.testing.assert_array_equal(index, [1, 2, 0, 0])  # a tie goes to the first
    np.testing.assert_array_equal(e, codebook[np.array([1, 2, 0, 0])])


def test_vq_loss_and_its_gradients_by_hand():
    action, reconstruction = jnp.array([[0.5]]), jnp.array([[0.3]])
    z, e = jnp.array([[0.6, 0.1]]), jnp.array([[1.0, 0.0]])
    # 0.2^2 + (0.4^2 + 0.1^2) + 0.25 (0.4^2 + 0.1^2) = 0.04 + 0.17 + 0.0425
    loss, parts = saq.vq_loss(action, reconstruction, z, e, 0.25)
    np.testing.assert_allclose([loss, *parts], [0.2525, 0.04, 0.17, 0.17], rtol=1e-6)
    # The encoder's output gets only the commitment's pull towards its code, the code only the
    # codebook term's pull towards the output.
    g_z, g_e = jax.grad(lambda z, e: saq.vq_loss(action, reconstruction, z, e, 0.25)[0], (0, 1))(
        z, e
    )
    np.testing.assert_allclose(g_z, [[0.25 * 2 * -0.4, 0.25 * 2 * 0.1]], rtol=1e-6)
    np.testing.assert_allclose(g_e, [[2 * 0.4, 2 * -0.1]], rtol=1e-6)


def test_the_decoder_passes_its_gradient_straight_through_the_quantisation():
    config = saq.SAQConfig(hidden_sizes=(8,), num_codes=4, latent_dim=2)
    vq = saq.VQVAE(config.hidden_sizes, 1, config.num_codes, config.latent_dim)
    obs, action = jnp.ones((3, 2)), jnp.array([[0.1], [-0.5], [0.9]])
    params = vq.init(jax.random.key(0), obs, action)

    def reconstruction_via_z(z):  # the decoder at z + sg(e - z), as the module applies it
        _, e = saq.quantize(z, params["params"]["codebook"])
        return vq.apply(params, obs, z + jax.lax.stop_gradient(e - z), method=saq.VQVAE.decode)

    def reconstruction_at(e):
        return vq.apply(params, obs, e, method=saq.VQVAE.decode)

    z = vq.apply(params, obs, action, method=saq.VQVAE.encode)
    _, e = saq.quantize(z, params["params"]["codebook"])
    np.testing.assert_allclose(reconstruction_via_z(z), reconstruction_at(e), rtol=1e-6)
    via_z = jax.jacobian(lambda z: reconstruction_via_z(z).sum())(z)
    at_e = jax.jacobian(lambda e: reconstruction_at(e).sum())(e)
    np.testing.assert_allclose(via_z, at_e, rtol=1e-6)  # d decoder / d e, passed to z unchanged
    assert np.abs(via_z).sum() > 0


def test_discrete_cql_penalty_by_hand():
    # logsumexp(1, 2, 3) = 3 + log(1 + e^-1 + e^-2) = 3.4076; minus the data's Q.
    q = jnp.array([[[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], [[3.0, 2.0, 1.0], [1.0, 1.0, 1.0]]])
    index = jnp.array([0, 2])
    lse = 3.0 + math.log(1.0 + math.exp(-1.0) + math.exp(-2.0))
    expected = [(lse - 1.0 + math.log(3.0)) / 2, (lse - 3.0 + 1.0 + math.log(3.0) - 1.0) / 2]
    np.testing.assert_allclose(saq.discrete_cql_penalty(q, index), expected, rtol=1e-6)
    # Its gradient: softmax(Q) on every code, minus 1 on the data's.
    g = jax.grad(lambda q: saq.discrete_cql_penalty(q, index)[0])(q)
    softmax = np.exp([1.0, 2.0, 3.0]) / np.exp([1.0, 2.0, 3.0]).sum()
    np.testing.assert_allclose(g[0, 0], (softmax - [1, 0, 0]) / 2, rtol=1e-5)


def test_the_vq_vae_learns_alone_then_stays_fixed_while_the_critics_learn(uniform_data):
    # 5 gradient steps an update, 20 in all; vq_fraction 0.5: two updates of the VQ-VAE alone,
    # then the critics.
    env, params = envs.make(PROBE, continuous=True)
    agent = saq.make(saq.SAQConfig(**SMALL, vq_fraction=0.5), env, params)
    hp = agent.default_hparams
    start = agent.init(jax.random.key(0), hp, uniform_data)
    run = jax.jit(driver.run, static_argnums=(0, 3))
    first, m1 = run(agent, start, hp, 2, uniform_data)
    assert not leaves_equal(first.learner.vq, start.learner.vq)
    assert leaves_equal(first.learner.critic, start.learner.critic)
    assert np.isnan(m1["losses/critic_loss"]).all() and np.isfinite(m1["losses/vq_loss"]).all()
    then, m2 = run(agent, first, hp, 2, uniform_data)
    assert leaves_equal(then.learner.vq, first.learner.vq)
    assert not leaves_equal(then.learner.critic, first.learner.critic)
    assert np.isnan(m2["losses/vq_loss"]).all() and np.isfinite(m2["losses/critic_loss"]).all()
    assert int(then.learner.step) == 20


def test_saq_learns_the_probe_over_its_codes(uniform_data):
    env, params = envs.make(PROBE, continuous=True)
    config = saq.SAQConfig(
        num_updates=30, gradient_steps=100, hidden_sizes=(32, 32), num_codes=8, vq_fraction=0.5
    )
    agent = saq.make(config, env, params)
    # A small penalty: the probe's rewards are at most 2.25 from 0, and CQL's pull towards the
    # dataset's frequent codes is of the order of alpha.
    hp = saq.SAQHparams(vq_lr=1e-3, critic_lr=1e-3, alpha_cql=0.1)
    state, metrics = train_jit(agent, jax.random.key(0), hp, 30, data=uniform_data)
    assert np.isfinite(metrics["losses/critic_loss"][15:]).all()
    assert metrics["losses/reconstruction"][14] < 0.02
    # The codes' actions at the probe's one state spread over the dataset's uniform actions.
    nets = agent.init.args[0].learner.greedy.args[0]  # (bound by loop.agent.bind, learner.bind)
    vq = functools.partial(nets.vq.apply, state.learner.vq)
    actions = vq(OBS, method=saq.VQVAE.all_actions)[0, :, 0]
    assert actions.min() < -0.6 and actions.max() > 0.6, actions
    # One-step episodes: Q(0, k) is the mean reward of the dataset's actions that quantise to k.
    # The greedy action is the decoded code whose actions have the highest mean reward, by hand
    # from the dataset, and it is near the best action, 0.5.
    obs = jnp.zeros((len(uniform_data), 1))
    z = vq(obs, uniform_data.actions, method=saq.VQVAE.encode)
    index = np.asarray(saq.quantize(z, state.learner.vq["params"]["codebook"])[0])
    rewards = np.asarray(uniform_data.rewards)
    used = np.unique(index)
    best = used[np.argmax([rewards[index == k].mean() for k in used])]
    np.testing.assert_allclose(agent.act(state, OBS, None, True), [[actions[best]]], rtol=1e-6)
    assert abs(float(actions[best]) - 0.5) < 0.2, actions


def test_saq_bad_input_is_refused_with_the_field_named():
    env, params = envs.make(PROBE, continuous=True)
    with pytest.raises(TypeError, match="saq handles bounded 1-D Box"):
        saq.make(saq.SAQConfig(), *envs.make(PROBE))  # discrete actions
    with pytest.raises(TypeError, match="needs a SAQConfig"):
        saq.make(iql.IQLConfig(), env, params)
    agent = saq.make(saq.SAQConfig(), env, params)
    agent.check_hparams(agent.default_hparams)
    bad = [("vq_lr", 0.0), ("critic_lr", -1.0), ("gamma", 1.5), ("commitment", -1.0)]
    for field, value in [*bad, ("alpha_cql", -0.1), ("tau", 2.0)]:
        with pytest.raises(ValueError, match=rf"saq: invalid hparams\.{field}"):
            agent.check_hparams(saq.SAQHparams(**{field: value}))
    for field in ("num_codes", "latent_dim"):
        with pytest.raises(ValueError, match=f"{field} must be an integer >= 1"):
            saq.SAQConfig(**{field: 0})
    for fraction, steps in [(0.0, 10), (1.0, 10), (0.01, 10), (0.96, 10), (-0.5, 100)]:
        with pytest.raises(ValueError, match=rf"vq_fraction={fraction} must be in \(0, 1\)"):
            saq.SAQConfig(num_updates=5, gradient_steps=steps // 5, vq_fraction=fraction)
    assert saq.SAQConfig(num_updates=30, gradient_steps=100).vq_steps == 600
