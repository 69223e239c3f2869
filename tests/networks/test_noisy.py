"""Noisy layers (`rlsuite.networks.noisy`): the factorised noise by hand, the initialisation,
noise drawn anew at each call given a key and the mean without one, and a noisy DQN whose greedy
actions are frozen while its exploring ones follow the noise."""

import jax
import jax.numpy as jnp
import numpy as np

from rlsuite import envs
from rlsuite.agents import dqn, rainbow
from rlsuite.networks.noisy import NoisyDense, NoisyMLP, scaled_noise


def test_the_factorised_noise_by_hand_and_the_mean_without_a_key():
    layer = NoisyDense(3)
    x = jax.random.normal(jax.random.key(0), (5, 4))
    params = layer.init(jax.random.key(1), x)["params"]
    # mu uniform in +-1/sqrt(4) = +-0.5, sigma 0.5 / sqrt(4) = 0.25
    assert np.abs(params["mu_kernel"]).max() <= 0.5 and np.abs(params["mu_bias"]).max() <= 0.5
    np.testing.assert_allclose(params["sigma_kernel"], 0.25)
    np.testing.assert_allclose(params["sigma_bias"], 0.25)
    mean = layer.apply({"params": params}, x)
    np.testing.assert_allclose(mean, x @ params["mu_kernel"] + params["mu_bias"], rtol=1e-6)
    # The noise's form, by hand: at init sigma is 0.25 everywhere, so a draw adds
    # 0.25 (x . f_in) f_out to the kernel's product and 0.25 f_out to the bias. A zero input
    # shows 0.25 f_out; the unit inputs e_k show 0.25 (f_in[k] + 1) f_out.
    probe = jnp.concatenate([jnp.zeros((1, 4)), jnp.eye(4)])
    rngs = {"noise": jax.random.key(2)}
    diff = layer.apply({"params": params}, probe, rngs=rngs) - layer.apply(
        {"params": params}, probe
    )
    f_out = np.asarray(diff[0]) / 0.25
    f_in = np.asarray(diff[1:, 0]) / (0.25 * f_out[0]) - 1.0
    by_hand = x @ (params["mu_kernel"] + 0.25 * np.outer(f_in, f_out))
    by_hand += params["mu_bias"] + 0.25 * f_out
    np.testing.assert_allclose(layer.apply({"params": params}, x, rngs=rngs), by_hand, atol=1e-5)
    # f(e) = sign(e) sqrt(|e|) of standard normal draws
    e = jax.random.normal(jax.random.key(3), (4,))
    np.testing.assert_allclose(scaled_noise(jax.random.key(3), 4), np.sign(e) * np.sqrt(np.abs(e)))


def test_noise_is_drawn_anew_at_each_key_and_the_same_key_draws_the_same():
    net = NoisyMLP((8,), 2)
    x = jnp.ones((3, 4))
    params = net.init(jax.random.key(0), x)
    a = net.apply(params, x, rngs={"noise": jax.random.key(1)})
    b = net.apply(params, x, rngs={"noise": jax.random.key(2)})
    again = net.apply(params, x, rngs={"noise": jax.random.key(1)})
    assert not np.allclose(a, b)
    np.testing.assert_array_equal(a, again)
    np.testing.assert_array_equal(net.apply(params, x), net.apply(params, x))  # the mean


def test_a_noisy_agent_explores_by_the_noise_and_its_greedy_actions_are_frozen():
    env, params = envs.make("cartpole")
    config = rainbow.RainbowConfig(hidden_sizes=(16,), num_atoms=11)
    agent = rainbow.make(config, env, params)
    assert agent.default_hparams == rainbow.RainbowHparams() and agent.name == "rainbow"
    state = agent.init(jax.random.key(0), agent.default_hparams)
    obs = jax.random.normal(jax.random.key(1), (256, 4))
    greedy = [np.asarray(agent.act(state, obs, jax.random.key(k), True)) for k in (2, 3)]
    np.testing.assert_array_equal(greedy[0], greedy[1])  # no noise: the same whatever the key
    explored = [np.asarray(agent.act(state, obs, jax.random.key(k), False)) for k in (2, 3)]
    # epsilon 0: only the noise moves them; two draws disagree on some observations
    assert (explored[0] != explored[1]).any()
    # the scalar head takes noisy layers too
    noisy_dqn = dqn.make(dqn.DQNConfig(noisy=True, hidden_sizes=(16,)), env, params)
    state = noisy_dqn.init(jax.random.key(0), noisy_dqn.default_hparams.replace(start_e=0.0))
    a = np.asarray(noisy_dqn.act(state, obs, jax.random.key(2), False))
    b = np.asarray(noisy_dqn.act(state, obs, jax.random.key(3), False))
    assert (a != b).any()
