"""Probe environments: each returns the reward and episode structure its known answer relies on."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs.probes import (
    ActionReward,
    ConstantReward,
    ObservationActionReward,
    ObservationReward,
    OneStepDiscount,
)

from rlsuite.environment.spaces import Box, Discrete


def episode(env, actions, key=0):
    """Run one episode with the given actions (as many as it lasts); returns obs, rewards, flags."""
    obs, state = env.reset(jax.random.key(key))
    seen, rewards, flags = [np.asarray(obs)], [], []
    for t, action in enumerate(actions):
        obs, state, reward, terminated, truncated, info = env.step(
            jax.random.key(100 + t), state, action
        )
        seen.append(np.asarray(info["final_observation"]))
        rewards.append(float(reward))
        flags.append((bool(terminated), bool(truncated)))
        if terminated:
            break
    return seen, rewards, flags


def discrete(a):
    return jnp.asarray(a, jnp.int32)


def continuous(a):
    return jnp.asarray([a], jnp.float32)


@pytest.mark.parametrize("is_continuous", [False, True])
def test_constant_reward_one_step(is_continuous):
    env = ConstantReward(continuous=is_continuous)
    action = continuous(0.3) if is_continuous else discrete(0)
    obs, rewards, flags = episode(env, [action, action])
    assert rewards == [1.0] and flags == [(True, False)]
    assert isinstance(env.action_space(None), Box if is_continuous else Discrete)


def test_observation_reward_equals_observation():
    env = ObservationReward()
    signs = set()
    for key in range(8):
        obs, rewards, _ = episode(env, [discrete(0)], key)
        assert rewards == [float(obs[0][0])] and obs[0][0] in (-1.0, 1.0)
        signs.add(float(obs[0][0]))
    assert signs == {-1.0, 1.0}


def test_one_step_discount_two_steps():
    # obs 0 -> reward 0, obs 1 -> reward 1 then terminal: V(0) = gamma, V(1) = 1.
    obs, rewards, flags = episode(OneStepDiscount(), [discrete(0)] * 3)
    assert [float(o[0]) for o in obs] == [0.0, 1.0, 1.0]
    assert rewards == [0.0, 1.0] and flags == [(False, False), (True, False)]


def test_action_reward():
    env = ActionReward()
    assert episode(env, [discrete(1)])[1] == [1.0]
    assert episode(env, [discrete(0)])[1] == [-1.0]
    env = ActionReward(continuous=True)
    assert episode(env, [continuous(0.5)])[1] == [0.0]
    np.testing.assert_allclose(episode(env, [continuous(-0.5)])[1], [-1.0])


def test_observation_action_reward():
    for is_continuous in (False, True):
        env = ObservationActionReward(continuous=is_continuous)
        for key in range(6):
            obs, _ = env.reset(jax.random.key(key))
            sign = float(obs[0])
            if is_continuous:
                best, worst = continuous(0.5 * sign), continuous(-0.5 * sign)
                expected = (0.0, -(sign**2))
            else:
                best, worst = discrete(int(sign > 0)), discrete(int(sign < 0))
                expected = (1.0, -1.0)
            got = (episode(env, [best], key)[1][0], episode(env, [worst], key)[1][0])
            np.testing.assert_allclose(got, expected)
