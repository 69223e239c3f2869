"""The base contract: auto-reset, final_observation, checks at trace time."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite.environment import split_step_key
from rlsuite.environment.wrappers import TimeLimit
from tests.counter_env import Counter, CounterParams


def test_auto_reset_returns_final_observation_and_fresh_start():
    env = Counter()
    params = CounterParams(terminate_at=2)
    step = jax.jit(env.step)
    obs, state = env.reset(jax.random.key(0), params)
    start = float(obs[0])
    a = jnp.zeros((1,))
    obs, state, reward, terminated, truncated, info = step(jax.random.key(1), state, a, params)
    assert float(obs[0]) == start + 1 and not terminated
    np.testing.assert_array_equal(info["final_observation"], obs)  # no reset: the same obs
    obs, state, reward, terminated, truncated, info = step(jax.random.key(2), state, a, params)
    assert bool(terminated) and not bool(truncated) and float(reward) == 1.0
    assert float(info["final_observation"][0]) == start + 2  # the terminal observation
    assert int(state.count) == 0  # a fresh episode
    assert float(obs[0]) == float(state.start) != start + 2


def test_same_key_same_step_different_key_different_reset():
    env = Counter()
    _, s1 = env.reset(jax.random.key(0))
    _, s2 = env.reset(jax.random.key(0))
    _, s3 = env.reset(jax.random.key(1))
    assert s1.start == s2.start and s1.start != s3.start


def test_step_vmaps_over_params():
    env = Counter(random_start=False)
    params = CounterParams(terminate_at=jnp.array([1, 2]))
    keys = jax.random.split(jax.random.key(0), 2)
    _, state = jax.vmap(env.reset, in_axes=(0, 0))(keys, params)
    out = jax.vmap(env.step, in_axes=(0, 0, None, 0))(keys, state, jnp.zeros((1,)), params)
    np.testing.assert_array_equal(out[3], [True, False])


@pytest.mark.parametrize("method", ["step", "step_without_reset"])
def test_wrong_action_shape_and_dtype_raise_at_trace_time(method):
    # step_without_reset (the core step every batched auto-reset uses) runs the checks of step.
    env = Counter()
    step = getattr(env, method)
    _, state = env.reset(jax.random.key(0))
    key = jax.random.key(1)
    with pytest.raises(ValueError, match=r"action shape \(2,\).*expects shape \(1,\)"):
        jax.jit(step)(key, state, jnp.zeros((2,)))
    with pytest.raises(TypeError, match="floating dtype"):
        jax.jit(step)(key, state, jnp.zeros((1,), jnp.int32))
    with pytest.raises(ValueError, match=r"params.terminate_at=-1"):
        step(key, state, jnp.zeros((1,)), CounterParams(terminate_at=-1))


def test_invalid_params_raise_with_field_name():
    env = Counter()
    with pytest.raises(ValueError, match=r"params.terminate_at=.*allowed: an integer >= 0"):
        env.reset(jax.random.key(0), CounterParams(terminate_at=-1))
    with pytest.raises(TypeError, match="params must be a CounterParams"):
        env.reset(jax.random.key(0), {"terminate_at": 3})
    # A batch of concrete params is checked element-wise before vmapping over it.
    with pytest.raises(ValueError, match="terminate_at"):
        env.check_params(CounterParams(terminate_at=jnp.array([1, -2])))


def test_time_limit_truncates_and_final_observation_is_pre_reset():
    env = TimeLimit(Counter(), max_episode_steps=3)
    params = CounterParams(terminate_at=0)
    obs, state = env.reset(jax.random.key(0), params)
    start = float(obs[0])
    step = jax.jit(env.step)
    flags = []
    for t in range(6):
        obs, state, _, terminated, truncated, info = step(
            jax.random.key(t + 1), state, jnp.zeros((1,)), params
        )
        flags.append((bool(terminated), bool(truncated)))
        if t == 2:
            assert float(info["final_observation"][0]) == start + 3
            assert int(state.time) == 0 and int(state.env_state.count) == 0
    assert flags == [(False, False), (False, False), (False, True)] * 2


def test_step_is_step_without_reset_then_reset_from_the_second_key():
    # The pieces every auto-reset shares: the same key split, the same checked core step.
    env = TimeLimit(Counter(), 5)
    params = CounterParams(terminate_at=1)
    _, state = env.reset(jax.random.key(0), params)
    key = jax.random.key(1)
    key_step, key_reset = split_step_key(key)
    obs, new_state, reward, terminated, truncated, info = env.step(
        key, state, jnp.ones((1,)), params
    )
    core = env.step_without_reset(key_step, state, jnp.ones((1,)), params)
    assert bool(terminated) and bool(core[3]) and float(reward) == float(core[2]) == 2.0
    assert int(core[1].env_state.count) == 1 and int(core[1].time) == 1  # no reset
    np.testing.assert_array_equal(info["final_observation"], core[0])
    obs_reset, state_reset = env.reset(key_reset, params)
    np.testing.assert_array_equal(obs, obs_reset)
    assert jax.tree.all(jax.tree.map(lambda a, b: bool(a == b), new_state, state_reset))
