import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite.environment.wrappers import TimeLimit
from rlsuite.loop.episodes import evaluate
from tests.counter_env import Counter, CounterParams


def policy_from(value):
    return lambda key, obs: (jnp.full((obs.shape[0], 1), value, jnp.float32), {})


def test_returns_and_lengths_by_hand():
    # Terminates after 3 steps, each reward = action + 1 = 1.5: return 4.5, length 3.
    env = TimeLimit(Counter(), 10)
    result = jax.jit(evaluate, static_argnums=(0, 2, 4))(
        env, CounterParams(terminate_at=3), policy_from(0.5), jax.random.key(0), 4
    )
    np.testing.assert_allclose(result.returns, [4.5] * 4)
    np.testing.assert_array_equal(result.lengths, [3] * 4)
    assert result.finished.all()


def test_truncation_ends_episodes_and_params_per_episode():
    # No termination: the time limit of 5 ends each episode: return 5 * 1.0.
    env = TimeLimit(Counter(), 5)
    result = evaluate(env, CounterParams(terminate_at=0), policy_from(0.0), jax.random.key(0), 2)
    np.testing.assert_allclose(result.returns, [5.0, 5.0])
    # One params per episode: termination at 1, 2, 7 (the last truncated at 5).
    params = CounterParams(terminate_at=jnp.array([1, 2, 7]))
    result = evaluate(env, params, policy_from(0.0), jax.random.key(0), 3, params_axis=0)
    np.testing.assert_array_equal(result.lengths, [1, 2, 5])
    np.testing.assert_allclose(result.returns, [1.0, 2.0, 5.0])


def test_unfinished_episodes_are_flagged_and_max_steps_required():
    result = evaluate(
        Counter(), CounterParams(terminate_at=0), policy_from(0.0), jax.random.key(0), 2, 4
    )
    np.testing.assert_array_equal(result.lengths, [4, 4])
    assert not result.finished.any()
    with pytest.raises(ValueError, match="pass max_steps"):
        evaluate(Counter(), None, policy_from(0.0), jax.random.key(0), 2)
    with pytest.raises(ValueError, match="num_episodes must be >= 1"):
        evaluate(TimeLimit(Counter(), 3), None, policy_from(0.0), jax.random.key(0), 0)


def test_vmap_over_seeds_and_stochastic_policy():
    env = TimeLimit(Counter(), 4)

    def noisy(key, obs):
        return jax.random.uniform(key, (obs.shape[0], 1), minval=-1.0, maxval=1.0), {}

    def run(key):
        return evaluate(env, CounterParams(terminate_at=0), noisy, key, 3)

    keys = jax.random.split(jax.random.key(3), 2)
    batched = jax.jit(jax.vmap(run))(keys)
    single = jax.jit(run)(keys[1])
    np.testing.assert_allclose(batched.returns[1], single.returns, rtol=1e-6)
    assert not np.allclose(batched.returns[0], batched.returns[1])
    assert batched.returns.shape == (2, 3)


def test_episodes_equal_those_of_the_auto_resetting_step():
    # evaluate steps without resets; the episodes must be those `jax.vmap(env.step)` gives, with
    # the same keys, up to each one's first end (a plain loop as the reference). A policy that
    # depends on the observation and the key.
    from rlsuite import envs
    from rlsuite.loop.rollout import reset_batch

    env, params = envs.make("cartpole")
    n = 8

    def policy(key, obs):
        noise = jax.random.normal(key, (obs.shape[0],))
        return (obs[:, 2] + obs[:, 3] + 0.05 * noise > 0).astype(jnp.int32), {}

    result = jax.jit(evaluate, static_argnums=(0, 2, 4))(env, params, policy, jax.random.key(4), n)
    key, key_reset = jax.random.split(jax.random.key(4))
    batch = reset_batch(env, params, key_reset, n)
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    obs, state = batch.obs, batch.state
    returns, lengths, running = np.zeros(n), np.zeros(n, int), np.ones(n, bool)
    while running.any():
        key, key_policy, key_env = jax.random.split(key, 3)
        action, _ = policy(key_policy, obs)
        obs, state, reward, terminated, truncated, _ = step(
            jax.random.split(key_env, n), state, action, params
        )
        returns += np.where(running, np.asarray(reward), 0.0)
        lengths += running
        running &= ~np.asarray(terminated | truncated)
    # Episodes end at different steps, by termination and by the time limit (500).
    assert len(set(lengths)) > 2 and (lengths < 500).any() and (lengths == 500).any()
    np.testing.assert_array_equal(result.lengths, lengths)
    np.testing.assert_array_equal(result.returns, returns.astype(np.float32))
    assert result.finished.all()
