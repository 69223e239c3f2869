import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite.evaluation import evaluate
from rlsuite.wrappers import TimeLimit
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
