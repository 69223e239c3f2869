import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs.point_mass import PointMass, PointMassState


def test_dynamics_by_hand():
    # dt=0.1, max_accel=2, damping=0.1: v' = 0.9 * v + 0.2 * a; p' = p + 0.1 * v'.
    env = PointMass()
    params = env.default_params
    state = PointMassState(jnp.array([0.0, 1.0]), jnp.array([1.0, 0.0]), jnp.array([1.0, 1.0]))
    obs, state, reward, terminated, truncated, info = env.step_env(
        jax.random.key(0), state, jnp.array([1.0, -1.0]), params
    )
    np.testing.assert_allclose(state.velocity, [1.1, -0.2], rtol=1e-6)
    np.testing.assert_allclose(state.position, [0.11, 0.98], rtol=1e-6)
    np.testing.assert_allclose(obs, [0.11, 0.98, 1.1, -0.2, 1.0, 1.0], rtol=1e-6)
    assert float(reward) == 0.0 and not terminated and not truncated
    np.testing.assert_allclose(info["achieved_goal"], state.position)


def test_success_reward_walls_and_relabelling():
    env = PointMass()
    params = env.default_params.replace(distance_cost=0.5)
    state = PointMassState(jnp.array([1.95, 0.0]), jnp.array([2.0, 0.0]), jnp.array([2.0, 0.05]))
    _, state, reward, _, _, info = env.step_env(jax.random.key(0), state, jnp.zeros(2), params)
    # v' = 1.8 -> p would be 2.13 > arena 2: clipped to 2 and that velocity component zeroed.
    np.testing.assert_allclose(state.position, [2.0, 0.0])
    np.testing.assert_allclose(state.velocity, [0.0, 0.0])
    # Distance 0.05 < radius 0.2: reward = 1 - 0.5 * 0.05.
    np.testing.assert_allclose(reward, 1 - 0.025, rtol=1e-6)
    assert bool(info["success"])
    relabelled = PointMass.compute_reward(info["achieved_goal"], info["achieved_goal"], params)
    assert float(relabelled) == 1.0


def test_reset_draws_goals_in_box_and_fixed_goal():
    env = PointMass()
    keys = jax.random.split(jax.random.key(0), 500)
    obs, state = jax.vmap(env.reset)(keys)
    assert np.all(np.abs(state.goal) <= 1.5) and np.all(np.abs(state.position) <= 0.5)
    assert np.unique(np.asarray(state.goal[:, 0])).size > 400
    np.testing.assert_array_equal(obs[:, 4:], state.goal)
    fixed = env.default_params.replace(
        goal_low=jnp.array([1.0, -1.0]), goal_high=jnp.array([1.0, -1.0])
    )
    _, state = jax.vmap(env.reset, in_axes=(0, None))(keys, fixed)
    np.testing.assert_allclose(state.goal, np.tile([1.0, -1.0], (500, 1)))
    # A curriculum over goal_low alone: its check against goal_high waits for concrete values.
    lows = jnp.stack([jnp.array([-1.0, -1.0]), jnp.array([0.5, 0.5])])
    reset = jax.vmap(lambda low, key: env.reset(key, env.default_params.replace(goal_low=low)))
    _, state = reset(lows, keys[:2])
    assert np.all(state.goal[1] >= 0.5) and np.all(state.goal <= 1.5)


def test_invalid_params():
    env = PointMass()
    with pytest.raises(ValueError, match="params.goal_radius"):
        env.reset(jax.random.key(0), env.default_params.replace(goal_radius=-1.0))
    with pytest.raises(ValueError, match="params.goal_high.*>= goal_low"):
        env.reset(jax.random.key(0), env.default_params.replace(goal_high=jnp.array([-2.0, 0.0])))
