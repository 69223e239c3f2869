"""Classic-control environments against gymnasium, the reference implementation.

Parity runs step our env and `gymnasium.make(id).unwrapped` side by side from the same start states
with the same actions. Acrobot (chaotic) and Pendulum (unstable near upright) amplify float32
rounding over long episodes, so long trajectories are compared with jax x64 against gymnasium's
float64, and float32 is compared one step at a time with our state set to gymnasium's before each
step. CartPole and MountainCarContinuous also stay within float32 tolerance over whole episodes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs.acrobot import Acrobot, AcrobotState
from rlsuite.envs.cartpole import CartPole, CartPoleState
from rlsuite.envs.mountain_car_continuous import MountainCarContinuous, MountainCarContinuousState
from rlsuite.envs.pendulum import Pendulum, PendulumState

from rlsuite.environment import Environment

pytestmark = pytest.mark.timeout(300)

KEY = jax.random.key(0)
RTOL = ATOL = 1e-5


def _random_push(rng: np.random.Generator, obs: np.ndarray) -> int:
    return int(rng.integers(2))


def _acrobot_pump(rng: np.random.Generator, obs: np.ndarray) -> int:
    """Torque along the second joint's velocity (90%), else random: ends episodes in ~100 steps."""
    if rng.random() < 0.1:
        return int(rng.integers(3))
    return 2 if obs[5] > 0 else 0


def _random_torque(rng: np.random.Generator, obs: np.ndarray) -> np.ndarray:
    return rng.uniform(-2.5, 2.5, (1,)).astype(np.float32)  # beyond +-2 to exercise the clip


def _car_pump(rng: np.random.Generator, obs: np.ndarray) -> np.ndarray:
    """Push along the velocity, with noise that also leaves [-1, 1] (the force is clipped)."""
    return np.array([np.sign(obs[1]) + rng.normal(0.0, 0.3)], np.float32)


@dataclasses.dataclass(frozen=True)
class Case:
    env: Environment
    gym_id: str
    state_cls: type
    policy: Callable[[np.random.Generator, np.ndarray], Any]
    reset_every: int | None  # forced episode end for an env that (almost) never terminates
    min_terminations: int
    reset_ranges: dict[str, tuple[float, float]]

    def step(self, *args):
        return STEP_ENV[self.gym_id](*args)


CASES = {
    "cartpole": Case(
        env=CartPole(),
        gym_id="CartPole-v1",
        state_cls=CartPoleState,
        policy=_random_push,
        reset_every=None,
        min_terminations=20,
        reset_ranges={f: (-0.05, 0.05) for f in ("x", "x_dot", "theta", "theta_dot")},
    ),
    "acrobot": Case(
        env=Acrobot(),
        gym_id="Acrobot-v1",
        state_cls=AcrobotState,
        policy=_acrobot_pump,
        reset_every=None,
        min_terminations=5,
        reset_ranges={f: (-0.1, 0.1) for f in ("theta1", "theta2", "dtheta1", "dtheta2")},
    ),
    "pendulum": Case(
        env=Pendulum(),
        gym_id="Pendulum-v1",
        state_cls=PendulumState,
        policy=_random_torque,
        reset_every=200,
        min_terminations=0,
        reset_ranges={"theta": (-math.pi, math.pi), "theta_dot": (-1.0, 1.0)},
    ),
    "mountain_car_continuous": Case(
        env=MountainCarContinuous(),
        gym_id="MountainCarContinuous-v0",
        state_cls=MountainCarContinuousState,
        policy=_car_pump,
        reset_every=None,
        min_terminations=5,  # the goal is reached
        reset_ranges={"position": (-0.6, -0.4), "velocity": (0.0, 0.0)},
    ),
}
# One jitted function per env, shared by all tests (x64 runs add one more trace each).
STEP_ENV = {c.gym_id: jax.jit(c.env.step_env) for c in CASES.values()}
STEP = {c.gym_id: jax.jit(c.env.step) for c in CASES.values()}


def _run_parity(case: Case, *, x64: bool, resync: bool, steps: int = 1000, seed: int = 0):
    """Step both envs `steps` times; assert agreement; return (episode ends, terminations)."""
    gym_env = gymnasium.make(case.gym_id).unwrapped
    gym_obs, _ = gym_env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    params = case.env.default_params
    dtype = jnp.float64 if x64 else jnp.float32
    ends = terminations = episode_steps = 0
    with jax.enable_x64(x64):
        state = case.state_cls(*jnp.asarray(gym_env.state, dtype))
        for t in range(steps):
            if resync:
                state = case.state_cls(*jnp.asarray(gym_env.state, dtype))
            action = case.policy(rng, gym_obs)
            gym_obs, gym_reward, gym_terminated, _, _ = gym_env.step(action)
            obs, state, reward, terminated, truncated, _ = case.step(
                KEY, state, jnp.asarray(action), params
            )
            msg = f"{case.gym_id} step {t}"
            np.testing.assert_allclose(obs, gym_obs, RTOL, ATOL, err_msg=msg)
            np.testing.assert_allclose(reward, gym_reward, RTOL, ATOL, err_msg=msg)
            assert bool(terminated) == gym_terminated, msg
            assert not bool(truncated), msg
            episode_steps += 1
            if gym_terminated or episode_steps == case.reset_every:
                ends += 1
                terminations += gym_terminated
                episode_steps = 0
                gym_obs, _ = gym_env.reset()
                state = case.state_cls(*jnp.asarray(gym_env.state, dtype))
    return ends, terminations


def _check_ends(case: Case, ends: int, terminations: int) -> None:
    assert ends >= 4, f"only {ends} episode ends"
    assert terminations >= case.min_terminations, f"only {terminations} terminations"


@pytest.mark.parametrize("name", list(CASES))
def test_long_trajectories_match_gymnasium_in_float64(name):
    case = CASES[name]
    _check_ends(case, *_run_parity(case, x64=True, resync=False))


@pytest.mark.parametrize("name", ["cartpole", "mountain_car_continuous"])
def test_long_trajectories_match_gymnasium_in_float32(name):
    case = CASES[name]
    _check_ends(case, *_run_parity(case, x64=False, resync=False))


@pytest.mark.parametrize("name", list(CASES))
def test_single_steps_match_gymnasium_in_float32(name):
    case = CASES[name]
    _check_ends(case, *_run_parity(case, x64=False, resync=True))


EDGE_CASES = [  # (env, gymnasium state, action): clipping, wrapping and walls
    ("cartpole", [2.39, 1.0, 0.2, 1.0], 0),
    ("acrobot", [3.1, -3.1, 12.5, 28.0], 2),
    ("acrobot", [-3.1, 3.1, -12.5, -28.0], 0),
    ("pendulum", [math.pi - 0.01, 7.9], np.array([3.0], np.float32)),
    ("pendulum", [0.1, -7.9], np.array([-5.0], np.float32)),
    ("mountain_car_continuous", [-1.19, -0.06], np.array([-1.5], np.float32)),
    ("mountain_car_continuous", [0.44, 0.06], np.array([2.0], np.float32)),
]


@pytest.mark.parametrize(("name", "gym_state", "action"), EDGE_CASES)
def test_edge_states_match_gymnasium(name, gym_state, action):
    case = CASES[name]
    gym_env = gymnasium.make(case.gym_id).unwrapped
    gym_env.reset(seed=0)
    gym_env.state = np.array(gym_state, np.float64)
    gym_obs, gym_reward, gym_terminated, _, _ = gym_env.step(action)
    state = case.state_cls(*jnp.asarray(gym_state, jnp.float32))
    obs, _, reward, terminated, _, _ = case.step(
        KEY, state, jnp.asarray(action), case.env.default_params
    )
    np.testing.assert_allclose(obs, gym_obs, RTOL, ATOL)
    np.testing.assert_allclose(reward, gym_reward, RTOL, ATOL)
    assert bool(terminated) == gym_terminated


def test_edge_states_reach_the_branches_they_test():
    """The clips and walls in EDGE_CASES are actually hit (so the cases above can fail)."""
    acrobot = CASES["acrobot"]
    state = AcrobotState(*jnp.asarray([3.1, -3.1, 12.5, 28.0], jnp.float32))
    next_state = acrobot.step(KEY, state, jnp.asarray(2), acrobot.env.default_params)[1]
    assert float(next_state.dtheta2) == pytest.approx(9 * math.pi)
    car = CASES["mountain_car_continuous"]
    state = MountainCarContinuousState(*jnp.asarray([-1.19, -0.06], jnp.float32))
    _, next_state, reward, *_ = car.step(KEY, state, jnp.array([-1.5]), car.env.default_params)
    assert float(next_state.position) == pytest.approx(-1.2)
    assert float(next_state.velocity) == 0.0
    assert float(reward) == pytest.approx(-0.1 * 1.5**2)  # the unclipped action, as in gymnasium


@pytest.mark.parametrize("name", list(CASES))
def test_spaces_and_dtypes_match_gymnasium(name):
    case = CASES[name]
    env, params = case.env, case.env.default_params
    gym_env = gymnasium.make(case.gym_id)
    assert env.max_episode_steps == gym_env.spec.max_episode_steps
    obs_space, gym_obs_space = env.observation_space(params), gym_env.observation_space
    np.testing.assert_array_equal(obs_space.low, gym_obs_space.low)
    np.testing.assert_array_equal(obs_space.high, gym_obs_space.high)
    assert obs_space.dtype == jnp.float32
    act_space, gym_act_space = env.action_space(params), gym_env.action_space
    if isinstance(gym_act_space, gymnasium.spaces.Discrete):
        assert act_space.n == gym_act_space.n
    else:
        np.testing.assert_array_equal(act_space.low, gym_act_space.low)
        np.testing.assert_array_equal(act_space.high, gym_act_space.high)
    obs, state = env.reset_env(KEY, params)
    assert obs.dtype == jnp.float32 and bool(obs_space.contains(obs))
    obs, state, reward, terminated, truncated, _ = case.step(
        KEY, state, act_space.sample(KEY), params
    )
    assert obs.dtype == jnp.float32 and obs.shape == obs_space.shape
    assert reward.dtype == jnp.float32 and reward.shape == ()
    assert terminated.dtype == jnp.bool_ and terminated.shape == ()
    assert truncated.dtype == jnp.bool_ and not bool(truncated)
    assert all(leaf.dtype == jnp.float32 for leaf in jax.tree.leaves(state))


def _assert_in_reset_ranges(case: Case, state: Any) -> None:
    for field, (low, high) in case.reset_ranges.items():
        values = np.asarray(getattr(state, field))
        assert np.all((values >= low) & (values <= high)), field


@pytest.mark.parametrize("name", list(CASES))
def test_reset_distribution_matches_gymnasium(name):
    case = CASES[name]
    params = case.env.default_params
    keys = jax.random.split(jax.random.key(1), 1000)
    obs, states = jax.jit(jax.vmap(case.env.reset_env, in_axes=(0, None)))(keys, params)
    _assert_in_reset_ranges(case, states)
    for field, (low, high) in case.reset_ranges.items():
        values = np.asarray(getattr(states, field))
        if low == high:
            continue
        margin = 0.02 * (high - low)  # 1,000 uniform draws cover the range to within 2%
        assert values.min() < low + margin and values.max() > high - margin, field
        assert len(np.unique(values)) == len(values), f"{field}: keys collide"
    assert bool(jnp.all(jax.vmap(case.env.observation_space(params).contains)(obs)))
    obs_again, _ = case.env.reset_env(keys[7], params)
    np.testing.assert_array_equal(obs_again, obs[7])


VARIED_FIELD = {
    "cartpole": ("gravity", 20.0, 1),
    "acrobot": ("gravity", 20.0, 2),
    "pendulum": ("gravity", 20.0, np.array([1.0], np.float32)),
    "mountain_car_continuous": ("power", 0.003, np.array([1.0], np.float32)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_step_vmaps_over_params(name):
    case = CASES[name]
    field, value, action = VARIED_FIELD[name]
    default = case.env.default_params
    params = [default, default.replace(**{field: value})]
    batch = jax.tree.map(lambda *leaves: jnp.asarray(leaves, jnp.float32), *params)
    _, state = case.env.reset_env(KEY, default)
    action = jnp.asarray(action)
    batched = jax.jit(jax.vmap(case.env.step, in_axes=(None, None, None, 0)))
    obs, states, reward, *_ = batched(KEY, state, action, batch)
    assert not np.allclose(obs[0], obs[1]), "the varied parameter had no effect"
    for i, p in enumerate(params):
        obs_i, state_i, reward_i, *_ = case.step(KEY, state, action, p)
        np.testing.assert_allclose(obs[i], obs_i, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(reward[i], reward_i, rtol=1e-6, atol=1e-7)
        for leaf, leaf_i in zip(jax.tree.leaves(states), jax.tree.leaves(state_i), strict=True):
            np.testing.assert_allclose(leaf[i], leaf_i, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", list(CASES))
def test_step_vmaps_over_keys_states_and_actions(name):
    case = CASES[name]
    env, params = case.env, case.env.default_params
    keys = jax.random.split(jax.random.key(2), 8)
    _, states = jax.vmap(env.reset_env, in_axes=(0, None))(keys, params)
    actions = jax.vmap(env.action_space(params).sample)(keys)
    batched = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    obs, _, reward, terminated, *_ = batched(keys, states, actions, params)
    assert obs.shape == (8, *env.observation_space(params).shape) and reward.shape == (8,)
    assert len(np.unique(np.asarray(obs[:, 0]))) == 8
    state_3 = jax.tree.map(lambda leaf: leaf[3], states)
    obs_3, *_ = STEP[case.gym_id](keys[3], state_3, actions[3], params)
    np.testing.assert_allclose(obs[3], obs_3, rtol=1e-6, atol=1e-7)


BAD_PARAMS = [
    ("cartpole", "masspole", -0.1),
    ("cartpole", "x_threshold", 0.0),
    ("acrobot", "link_mass_1", -1.0),
    ("acrobot", "torque_noise_max", -0.5),
    ("pendulum", "mass", -1.0),
    ("mountain_car_continuous", "power", -0.001),
]


@pytest.mark.parametrize(("name", "field", "value"), BAD_PARAMS)
def test_invalid_params_are_rejected(name, field, value):
    env = CASES[name].env
    bad = env.default_params.replace(**{field: value})
    with pytest.raises(ValueError, match=rf"{env.name}: invalid params\.{field}="):
        env.reset(KEY, bad)


def test_params_of_another_env_are_rejected():
    with pytest.raises(TypeError, match="CartPoleParams"):
        CartPole().reset(KEY, Pendulum().default_params)
    with pytest.raises(TypeError, match="PendulumParams"):
        Pendulum().step(KEY, None, jnp.zeros(1), CartPole().default_params)


NEAR_TERMINAL = {  # (state one step from termination, action)
    "cartpole": (CartPoleState(*jnp.asarray([2.39, 1.0, 0.0, 0.0])), 1),
    "acrobot": (AcrobotState(*jnp.asarray([math.pi - 0.05, 0.0, 0.0, 0.0])), 1),
    "mountain_car_continuous": (
        MountainCarContinuousState(*jnp.asarray([0.44, 0.05])),
        np.array([1.0], np.float32),
    ),
}


@pytest.mark.parametrize("name", list(NEAR_TERMINAL))
def test_step_auto_resets_on_termination(name):
    case = CASES[name]
    state, action = NEAR_TERMINAL[name]
    action = jnp.asarray(action)
    params = case.env.default_params
    terminal_obs, *_ = case.step(KEY, state, action, params)
    obs, new_state, reward, terminated, truncated, info = STEP[case.gym_id](KEY, state, action)
    assert bool(terminated) and not bool(truncated)
    np.testing.assert_allclose(info["final_observation"], terminal_obs, rtol=1e-6, atol=1e-7)
    _assert_in_reset_ranges(case, new_state)
    np.testing.assert_array_equal(obs, case.env._obs(new_state))
    assert not np.allclose(obs, terminal_obs)


def test_step_without_termination_keeps_the_episode():
    case = CASES["pendulum"]
    _, state = case.env.reset_env(KEY, case.env.default_params)
    action = jnp.array([0.5], jnp.float32)
    obs, new_state, _, terminated, truncated, info = STEP[case.gym_id](KEY, state, action)
    expected_obs, expected_state, *_ = case.step(KEY, state, action, case.env.default_params)
    assert not bool(terminated) and not bool(truncated)
    np.testing.assert_allclose(obs, expected_obs, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(info["final_observation"], expected_obs, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(new_state.theta, expected_state.theta, rtol=1e-6, atol=1e-7)


def _next_state(case: Case, state: Any, action: Any, params: Any) -> Any:
    return case.step(KEY, state, jnp.asarray(action), params)[1]


def test_termination_boundaries_are_as_in_gymnasium():
    """CartPole ends when |x| > x_threshold (strict); the car when position >= goal (inclusive)."""
    cart = CASES["cartpole"]
    state = CartPoleState(*jnp.asarray([2.0, 1.0, 0.0, 0.0]))
    default = cart.env.default_params
    x = float(_next_state(cart, state, 1, default).x)
    below = float(np.nextafter(np.float32(x), np.float32(-np.inf)))
    assert not bool(cart.step(KEY, state, jnp.asarray(1), default.replace(x_threshold=x))[3])
    assert bool(cart.step(KEY, state, jnp.asarray(1), default.replace(x_threshold=below))[3])

    car = CASES["mountain_car_continuous"]
    state = MountainCarContinuousState(*jnp.asarray([0.3, 0.05]))
    default, action = car.env.default_params, jnp.array([1.0], jnp.float32)
    position = float(_next_state(car, state, action, default).position)
    above = float(np.nextafter(np.float32(position), np.float32(np.inf)))
    assert bool(car.step(KEY, state, action, default.replace(goal_position=position))[3])
    assert not bool(car.step(KEY, state, action, default.replace(goal_position=above))[3])
