import jax
import jax.numpy as jnp
import numpy as np

from rlsuite.rollout import reset_batch, rollout
from rlsuite.wrappers import TimeLimit
from tests.counter_env import Counter, CounterParams

NUM_ENVS, NUM_STEPS = 3, 5


def constant_policy(value):
    def policy(key, obs):
        action = jnp.full((obs.shape[0], 1), value, jnp.float32)
        return action, {"obs_sum": obs.sum(-1)}

    return policy


def test_rollout_shapes_next_obs_and_carry():
    env = Counter()
    params = CounterParams(terminate_at=2)
    batch = reset_batch(env, params, jax.random.key(0), NUM_ENVS)
    starts = np.asarray(batch.obs[:, 0])
    run = jax.jit(rollout, static_argnums=(0, 2, 5))
    new_batch, tr = run(env, params, constant_policy(0.5), jax.random.key(1), batch, NUM_STEPS)
    assert tr.obs.shape == (NUM_STEPS, NUM_ENVS, 1) and tr.reward.shape == (NUM_STEPS, NUM_ENVS)
    np.testing.assert_allclose(tr.reward, 1.5)
    # Episodes of two steps: terminated at t = 1 and t = 3.
    np.testing.assert_array_equal(tr.terminated[:, 0], [False, True, False, True, False])
    assert not tr.truncated.any()
    # next_obs is pre-reset: start + 1, start + 2 in the first episode.
    np.testing.assert_allclose(tr.next_obs[0, :, 0], starts + 1)
    np.testing.assert_allclose(tr.next_obs[1, :, 0], starts + 2)
    # After the reset the obs is a new start, which differs from start + 2.
    assert np.all(tr.obs[2, :, 0] != starts + 2)
    np.testing.assert_allclose(tr.next_obs[2, :, 0], tr.obs[2, :, 0] + 1)
    # Policy extras and env info travel with each transition.
    np.testing.assert_allclose(tr.extras["obs_sum"], tr.obs[..., 0])
    np.testing.assert_array_equal(tr.info["count"][:, 0], [1, 2, 1, 2, 1])
    assert "final_observation" not in tr.info
    np.testing.assert_allclose(new_batch.obs[:, 0], tr.next_obs[-1, :, 0])


def test_rollout_same_key_same_run_different_key_different_run_and_vmap_over_seeds():
    env = TimeLimit(Counter(), 2)

    def run(key):
        key_reset, key_roll = jax.random.split(key)
        batch = reset_batch(env, None, key_reset, NUM_ENVS)
        return rollout(env, None, constant_policy(0.0), key_roll, batch, NUM_STEPS)[1]

    keys = jax.random.split(jax.random.key(7), 2)
    a, b = jax.jit(run)(keys[0]), jax.jit(run)(keys[0])
    c = jax.jit(run)(keys[1])
    np.testing.assert_array_equal(a.obs, b.obs)
    assert not np.array_equal(a.obs, c.obs)
    batched = jax.jit(jax.vmap(run))(keys)
    np.testing.assert_array_equal(batched.obs[0], a.obs)
    np.testing.assert_array_equal(batched.obs[1], c.obs)
    assert batched.truncated.shape == (2, NUM_STEPS, NUM_ENVS)
    np.testing.assert_array_equal(batched.truncated[0, :, 0], [False, True] * 2 + [False])


def test_rollout_with_one_params_per_env():
    env = Counter(random_start=False)
    params = CounterParams(terminate_at=jnp.array([1, 2, 3]))
    batch = reset_batch(env, params, jax.random.key(0), NUM_ENVS, params_axis=0)
    _, tr = rollout(env, params, constant_policy(0.0), jax.random.key(1), batch, 6, params_axis=0)
    np.testing.assert_array_equal(tr.terminated.sum(0), [6, 3, 2])
