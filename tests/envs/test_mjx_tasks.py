"""The MJX task families (`envs/tasks/mjx_tasks.py`): each reward against a hand computation from
the torso positions, the task in params changing the reward, termination apart from the horizon,
the samplers' ranges, the `meta/` names and bad input refused before anything is compiled.

MJX compiles slowly on a CPU (tens of seconds per Brax step), so each family is built once (with
a horizon of 3) and one jitted function per family runs a reset and 3 steps, called with several
tasks; the runs of whole RL^2 trials and the ant's termination are marked slow."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs.tasks import mjx_tasks
from rlsuite.envs.tasks.mjx_tasks import (
    AntDirection,
    AntDirectionParams,
    CheetahVelocity,
    CheetahVelocityParams,
)

from rlsuite import envs
from rlsuite.environment.meta import RL2, info_keys

pytestmark = pytest.mark.timeout(300)

KEY = jax.random.key(0)
HORIZON = 3
# The actions of the 3 steps (each component the same but the last step's): their squared sums
# are 0.25 d, 0.09 d and 1 for an action of d components.
CHEETAH_ACTIONS = np.array([[0.5] * 6, [-0.3] * 6, [1.0] + [0.0] * 5], np.float32)
ANT_ACTIONS = np.array([[0.5] * 8, [-0.3] * 8, [1.0] + [0.0] * 7], np.float32)
# Control costs: cheetah 0.05 * (1.5, 0.54, 1), ant 0.5 * (2, 0.72, 1).
CHEETAH_CTRL = np.array([0.075, 0.027, 0.05])
ANT_CTRL = np.array([1.0, 0.36, 0.5])
DT = 0.05  # 5 MJX steps of 0.01 s per control step, both robots


def _runner(env):
    """`run(key, params, actions)`: a reset, then one core step (no auto-reset) per action;
    returns the torso positions [steps + 1, 3] (from the reset on) and each step's outputs."""

    def run(key, params, actions):
        key_reset, key_steps = jax.random.split(key)
        _, state = env.reset_env(key_reset, params)

        def body(state, xs):
            key, action = xs
            _, state, reward, terminated, truncated, info = env.step_env(key, state, action, params)
            torso = state.brax_state.pipeline_state.x.pos[0]
            return state, (torso, reward, terminated, truncated, info)

        keys = jax.random.split(key_steps, actions.shape[0])
        _, (torso, *out) = jax.lax.scan(body, state, (keys, actions))
        first = state.brax_state.pipeline_state.x.pos[0][None]
        return jnp.concatenate([first, torso]), *out

    compiled = jax.jit(run)
    return lambda key, params, actions: jax.tree.map(np.asarray, compiled(key, params, actions))


@pytest.fixture(scope="module")
def cheetah():
    """`(rl2 env, params, run)` of meta/cheetah_velocity with episodes of 3 steps."""
    env, params = envs.make("meta/cheetah_velocity", max_steps=HORIZON)
    return env, params, _runner(env.env)


@pytest.fixture(scope="module")
def ant():
    env, params = envs.make("meta/ant_direction", max_steps=HORIZON)
    return env, params, _runner(env.env)


def _trace_step(env, params, action):
    """Trace (never run) a reset and a step of `env` on `params`."""

    def reset_step(key):
        _, state = env.reset_env(key, params)
        return env.step_env(key, state, jnp.asarray(action), params)

    return jax.eval_shape(reset_step, KEY)


# ----------------------------------------------------------------------------- cheetah-velocity
@pytest.mark.slow
def test_cheetah_reward_is_minus_the_velocity_error_less_the_control_cost(cheetah):
    env, params, run = cheetah
    assert isinstance(env, RL2) and isinstance(env.env, CheetahVelocity)
    assert env.sample_task is mjx_tasks.sample_velocity and env.episodes_per_trial == 2
    assert env.max_episode_steps == 2 * HORIZON  # a trial of 2 episodes of 3 steps
    assert env.observation_space(params).shape == (17 + 6 + 2,)  # obs, prev action, reward, done
    np.testing.assert_allclose(env.env.brax_env.dt, DT, rtol=1e-6)

    results = {}
    for target in (0.5, 2.5):
        task = params.replace(target_velocity=jnp.float32(target))
        results[target] = run(KEY, task, CHEETAH_ACTIONS)
        torso, reward, terminated, truncated, info = results[target]
        velocity = np.diff(torso[:, 0]) / DT  # the torso's x displacement per control step
        np.testing.assert_allclose(info["velocity"], velocity, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(reward + CHEETAH_CTRL, -np.abs(velocity - target), atol=1e-4)
        np.testing.assert_allclose(info["velocity_error"], np.abs(velocity - target), atol=1e-4)
        np.testing.assert_allclose(info["reward_ctrl"], -CHEETAH_CTRL, rtol=1e-5)
        np.testing.assert_array_equal(info["target_velocity"], np.float32(target))
        # The horizon truncates; the cheetah never terminates.
        np.testing.assert_array_equal(truncated, [False, False, True])
        np.testing.assert_array_equal(terminated, [False, False, False])

    # The task lives in params only: the same key and actions give the same motion, and the
    # rewards differ by exactly |v - 0.5| - |v - 2.5|.
    slow, fast = results[0.5], results[2.5]
    np.testing.assert_array_equal(slow[0], fast[0])
    v = slow[4]["velocity"]
    np.testing.assert_allclose(fast[1] - slow[1], np.abs(v - 0.5) - np.abs(v - 2.5), atol=1e-5)
    assert np.abs(fast[1] - slow[1]).max() > 0.1


def test_cheetah_info_reaches_the_trial_wrapper(cheetah):
    env, params, _ = cheetah
    keys = info_keys(env, params)  # traced abstractly
    assert {"velocity", "target_velocity", "velocity_error", "trial_done"} <= keys


# ----------------------------------------------------------------------------- ant-direction
@pytest.mark.slow
def test_ant_reward_projects_the_velocity_on_the_direction(ant):
    env, params, run = ant
    assert isinstance(env.env, AntDirection) and env.sample_task is mjx_tasks.sample_direction
    assert env.observation_space(params).shape == (27 + 8 + 2,)
    rewards = {}
    for direction in ((1.0, 0.0), (-1.0, 0.0), (0.6, 0.8)):
        task = params.replace(direction=jnp.array(direction, jnp.float32))
        torso, reward, terminated, truncated, info = run(KEY, task, ANT_ACTIONS)
        velocity = np.diff(torso[:, :2], axis=0) / DT  # the torso's (x, y) displacement / dt
        along = velocity @ np.array(direction)
        np.testing.assert_allclose(info["velocity"], along, rtol=1e-4, atol=1e-4)
        # Brax's ant: + 1 per healthy step, - 0.5 sum(a^2), no contact cost.
        np.testing.assert_allclose(reward, along + 1.0 - ANT_CTRL, atol=1e-4)
        # Healthy throughout (torso height inside [0.2, 1.0]): only the horizon ends it.
        height = torso[1:, 2]
        assert np.all((height > 0.2) & (height < 1.0))
        np.testing.assert_array_equal(terminated, [False, False, False])
        np.testing.assert_array_equal(truncated, [False, False, True])
        rewards[direction] = reward
    # Forward and backward rewards sum to twice the direction-free part 1 - ctrl.
    np.testing.assert_allclose(
        rewards[(1.0, 0.0)] + rewards[(-1.0, 0.0)], 2 * (1.0 - ANT_CTRL), atol=1e-4
    )
    assert np.abs(rewards[(1.0, 0.0)] - rewards[(-1.0, 0.0)]).max() > 0.05


# ----------------------------------------------------------------------------- samplers
def test_velocity_sampler_draws_within_the_range():
    params = CheetahVelocityParams(velocity_low=0.5, velocity_high=2.0)
    keys = jax.random.split(KEY, 20_000)
    draws = jax.jit(jax.vmap(mjx_tasks.sample_velocity, in_axes=(0, None)))(keys, params)
    v = np.asarray(draws.target_velocity)
    assert v.shape == (20_000,) and v.dtype == np.float32
    assert v.min() >= 0.5 and v.max() <= 2.0
    assert v.min() < 0.51 and v.max() > 1.99
    # U[0.5, 2]: mean 1.25, variance 1.5^2 / 12 = 0.1875 (standard error of the mean 0.003).
    assert abs(v.mean() - 1.25) < 0.015 and abs(v.var() - 0.1875) < 0.01
    # The range is a params field: vmapping over params draws from several ranges at once.
    ranges = CheetahVelocityParams(
        target_velocity=jnp.zeros(2), velocity_low=jnp.array([0.0, 5.0]),
        velocity_high=jnp.array([0.0, 6.0]),
    )  # fmt: skip
    drawn = np.asarray(jax.vmap(mjx_tasks.sample_velocity)(keys[:2], ranges).target_velocity)
    assert drawn[0] == 0.0 and 5.0 <= drawn[1] <= 6.0
    same = mjx_tasks.sample_task(keys[0], params)
    assert same.target_velocity == v[0]  # sample_task dispatches on the params type


def test_direction_sampler_forward_backward_and_planar():
    keys = jax.random.split(KEY, 20_000)
    sample = jax.jit(jax.vmap(mjx_tasks.sample_direction, in_axes=(0, None)))
    axial = np.asarray(sample(keys, AntDirectionParams()).direction)
    assert axial.dtype == np.float32
    assert set(map(tuple, np.unique(axial, axis=0).tolist())) == {(-1.0, 0.0), (1.0, 0.0)}
    assert abs((axial[:, 0] > 0).mean() - 0.5) < 0.015  # a fair coin (standard error 0.0035)
    planar = np.asarray(sample(keys, AntDirectionParams(forward_backward=False)).direction)
    np.testing.assert_allclose(np.linalg.norm(planar, axis=1), 1.0, atol=1e-6)
    angle = np.arctan2(planar[:, 1], planar[:, 0])
    quadrant = np.floor((angle + np.pi) / (np.pi / 2)).astype(int) % 4
    np.testing.assert_allclose(np.bincount(quadrant, minlength=4) / 20_000, 0.25, atol=0.015)
    assert mjx_tasks.sample_task(keys[0], AntDirectionParams()).direction.tolist() == list(axial[0])


# ----------------------------------------------------------------------------- bad input
def test_bad_input_is_refused_naming_the_field(cheetah, ant):
    cheetah_env, cheetah_params, _ = cheetah
    ant_env, ant_params, _ = ant
    with pytest.raises(ValueError, match=r"params\.velocity_high=1\.0; allowed: .*>= velocity_low"):
        cheetah_env.check_params(cheetah_params.replace(velocity_low=2.0, velocity_high=1.0))
    # A leaf with an extra axis passes as a batch of tasks, and fails where one is traced.
    batch = cheetah_params.replace(target_velocity=jnp.zeros(2))
    cheetah_env.check_params(batch)
    with pytest.raises(ValueError, match=r"params\.target_velocity of shape \(2,\) in step"):
        _trace_step(cheetah_env.env, batch, CHEETAH_ACTIONS[0])
    with pytest.raises(ValueError, match=r"params\.direction of shape \(2, 2\) in step"):
        _trace_step(ant_env.env, ant_params.replace(direction=jnp.eye(2)), ANT_ACTIONS[0])
    with pytest.raises(ValueError, match=r"params\.velocity_low=nan"):
        cheetah_env.check_params(cheetah_params.replace(velocity_low=float("nan")))
    with pytest.raises(ValueError, match=r"params\.direction=\[2\.0, 0\.0\]; allowed: a unit"):
        ant_env.check_params(ant_params.replace(direction=jnp.array([2.0, 0.0])))
    with pytest.raises(ValueError, match=r"params\.direction of shape \(3,\)"):
        ant_env.check_params(ant_params.replace(direction=jnp.ones(3) / np.sqrt(3)))
    # Refused before Brax builds anything.
    with pytest.raises(ValueError, match=r"CheetahVelocity: invalid max_steps=0; allowed"):
        CheetahVelocity(max_steps=0)
    with pytest.raises(ValueError, match=r"invalid episodes_per_trial=0"):
        envs.make("meta/ant_direction", episodes_per_trial=0)
    with pytest.raises(TypeError, match="CheetahVelocityParams or AntDirectionParams"):
        mjx_tasks.sample_task(KEY, envs.make("meta/point_robot")[1])


def test_range_with_low_above_high_is_refused_by_make():
    with pytest.raises(ValueError, match=r"velocity_high=1\.0; allowed: .*velocity_low \(2\.0\)"):
        envs.make("meta/cheetah_velocity", velocity_low=2.0, velocity_high=1.0)


# ----------------------------------------------------------------------------- slow
@pytest.mark.slow
def test_ant_termination_is_not_truncation():
    # A healthy range the start height (0.75 +- 0.1) is above: the ant is unhealthy at once.
    env = AntDirection(max_steps=HORIZON, healthy_z_range=(0.2, 0.5))
    torso, reward, terminated, truncated, _ = _runner(env)(KEY, env.default_params, ANT_ACTIONS)
    assert torso[1, 2] > 0.5
    assert terminated[0] and not truncated[0]


@pytest.mark.slow
def test_cheetah_trials_on_held_out_targets_under_vmap(cheetah):
    env, params, _ = cheetah
    held_out = RL2(env.env, None, episodes_per_trial=2)  # the task as given in params
    targets = jnp.array([0.25, 2.75], jnp.float32)
    tasks = jax.vmap(lambda t: params.replace(target_velocity=t))(targets)

    def trial(key, task):
        obs, state = held_out.reset(key, task)

        def body(state, key):
            action = 0.5 * jnp.ones(6)
            _, state, reward, terminated, _, info = held_out.step(key, state, action, task)
            return state, (reward, terminated, info)

        return jax.lax.scan(body, state, jax.random.split(key, 2 * HORIZON))[1]

    keys = jax.random.split(KEY, 2)
    reward, terminated, info = jax.tree.map(np.asarray, jax.jit(jax.vmap(trial))(keys, tasks))
    np.testing.assert_array_equal(info["target_velocity"], np.repeat(targets[:, None], 6, 1))
    error = np.abs(info["velocity"] - np.asarray(targets)[:, None])
    np.testing.assert_allclose(info["velocity_error"], error, atol=1e-5)
    np.testing.assert_allclose(reward, -error - 0.05 * 6 * 0.25, atol=1e-4)
    np.testing.assert_array_equal(info["episode_done"][0], [False, False, True] * 2)
    np.testing.assert_array_equal(terminated[0], [False] * 5 + [True])  # the trial's end only
