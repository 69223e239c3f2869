"""Action heads (`rlsuite.networks.action_heads`): each kind of action distribution samples,
scores, estimates its entropy and picks its mode as written down, against hand-derived values;
the environment gets the actions as the head says; PPO's steps take every one of these from the
head of its setup."""

import distrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import ppo
from rlsuite.environment.spaces import Box, Discrete
from rlsuite.environment.wrappers import ClipAction, RescaleAction
from rlsuite.networks import action_heads, tanh_gaussian
from rlsuite.networks.action_heads import CATEGORICAL, GAUSSIAN, TANH_GAUSSIAN


def test_categorical_head_samples_scores_and_picks_the_most_likely_action():
    probs = jnp.array([0.1, 0.6, 0.3])
    dist = distrax.Categorical(logits=jnp.log(probs))
    key = jax.random.key(0)
    action, extras = CATEGORICAL.sample(dist, key)
    assert set(extras) == {"log_prob"}
    np.testing.assert_allclose(extras["log_prob"], np.log(probs[action]), rtol=1e-6)
    assert CATEGORICAL.learned_action(action, extras) is action
    np.testing.assert_allclose(CATEGORICAL.log_prob(dist, 2), np.log(0.3), rtol=1e-6)
    entropy = -(0.1 * np.log(0.1) + 0.6 * np.log(0.6) + 0.3 * np.log(0.3))  # 0.8979
    np.testing.assert_allclose(CATEGORICAL.entropy(dist, None), entropy, rtol=1e-6)
    assert int(CATEGORICAL.mode(dist)) == 1
    same, keys = CATEGORICAL.entropy_keys(key, 4)
    assert same is key and keys is None  # the epoch shuffles with its own key


def test_gaussian_head_is_scored_at_the_unclipped_sample_and_the_env_clips():
    dist = distrax.MultivariateNormalDiag(jnp.array([0.5]), jnp.array([2.0]))
    action, extras = GAUSSIAN.sample(dist, jax.random.key(1))
    z = (float(action[0]) - 0.5) / 2.0
    np.testing.assert_allclose(extras["log_prob"], -0.5 * z**2 - np.log(2.0 * np.sqrt(2 * np.pi)))
    np.testing.assert_allclose(GAUSSIAN.entropy(dist, None), 0.5 * np.log(2 * np.pi * np.e * 4))
    np.testing.assert_allclose(GAUSSIAN.mode(dist), [0.5])
    env, params = envs.make("pendulum")
    assert isinstance(GAUSSIAN.wrap(env), ClipAction) and CATEGORICAL.wrap(env) is env


def test_squashed_head_keeps_the_pre_tanh_sample_and_scores_it_with_the_correction():
    mean, log_std = jnp.array([0.3, -0.2]), jnp.log(jnp.array([0.5, 1.5]))
    dist = tanh_gaussian(mean, log_std)
    key = jax.random.key(2)
    action, extras = TANH_GAUSSIAN.sample(dist, key)
    raw = extras["raw"]
    np.testing.assert_array_equal(raw, dist.distribution.sample(seed=key))
    np.testing.assert_allclose(action, np.tanh(raw), rtol=1e-6)
    # log N(u; mean, std) - sum_i log(1 - tanh(u_i)^2), at u itself (no atanh of the action).
    std = np.exp(np.asarray(log_std))
    u = np.asarray(raw, np.float64)
    gauss = -0.5 * ((u - np.asarray(mean)) / std) ** 2 - np.log(std * np.sqrt(2 * np.pi))
    expected = gauss.sum() - np.log(1 - np.tanh(u) ** 2).sum()
    np.testing.assert_allclose(extras["log_prob"], expected, rtol=1e-5)
    assert TANH_GAUSSIAN.learned_action(action, extras) is raw
    np.testing.assert_allclose(TANH_GAUSSIAN.log_prob(dist, raw), expected, rtol=1e-5)
    np.testing.assert_allclose(TANH_GAUSSIAN.mode(dist), np.tanh([0.3, -0.2]), rtol=1e-6)
    # The entropy at one fresh sample, from the keys the head splits per minibatch step.
    left, keys = TANH_GAUSSIAN.entropy_keys(key, 3)
    first, second = jax.random.split(key)
    np.testing.assert_array_equal(jax.random.key_data(left), jax.random.key_data(first))
    np.testing.assert_array_equal(
        jax.random.key_data(keys), jax.random.key_data(jax.random.split(second, 3))
    )
    v = np.asarray(dist.distribution.sample(seed=keys[0]), np.float64)
    exact = (0.5 * np.log(2 * np.pi * np.e * std**2)).sum()
    np.testing.assert_allclose(
        TANH_GAUSSIAN.entropy(dist, keys[0]), exact + np.log(1 - np.tanh(v) ** 2).sum(), rtol=1e-5
    )
    env, _ = envs.make("pendulum")
    assert isinstance(TANH_GAUSSIAN.wrap(env), RescaleAction)


def test_the_head_of_a_policy_and_the_refusals():
    box = Box(low=-1.0, high=1.0, shape=(2,))
    assert action_heads.for_policy(Discrete(3)) is CATEGORICAL
    assert action_heads.for_policy(box) is GAUSSIAN
    assert action_heads.for_policy(box, "tanh_gaussian") is TANH_GAUSSIAN
    with pytest.raises(ValueError, match=r"kind='beta'; allowed: gaussian, tanh_gaussian"):
        action_heads.for_policy(box, "beta")
    with pytest.raises(TypeError, match="no tanh_gaussian head for Discrete"):
        action_heads.for_policy(Discrete(3), "tanh_gaussian")
    # PPO's setup carries the head its config and action space give.
    for name, distribution, head in [
        ("cartpole", "gaussian", CATEGORICAL),
        ("pendulum", "gaussian", GAUSSIAN),
        ("pendulum", "tanh_gaussian", TANH_GAUSSIAN),
    ]:
        env, params = envs.make(name)
        config = ppo.PPOConfig(distribution=distribution, hidden_sizes=(8,))
        assert ppo.prepare(config, env, params).head is head, (name, distribution)
