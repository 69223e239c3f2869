"""Pendulum: swing a torque-limited pendulum up and keep it upright.

Reference: gymnasium's `Pendulum-v1` (`gymnasium/envs/classic_control/pendulum.py`). Same dynamics
(semi-implicit Euler with the angular velocity clipped), reward
`-(angle_normalize(theta)^2 + 0.1 theta_dot^2 + 0.001 u^2)` with the clipped torque `u`, no
termination and the same start distribution; the 200-step limit is applied by `TimeLimit`.

The torque limit `MAX_TORQUE` is a class constant rather than a parameter because it is the bound
of the action space, and spaces are static (they cannot depend on params traced under `vmap`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import struct

from rlsuite.environment import Environment, param_fields
from rlsuite.environment.spaces import Box
from rlsuite.ops.validators import check_positive


@struct.dataclass
class PendulumParams:
    max_speed: float = 8.0
    dt: float = 0.05
    gravity: float = 10.0  # gymnasium's g, m, l
    mass: float = 1.0
    length: float = 1.0


@struct.dataclass
class PendulumState:
    theta: jax.Array  # 0 is upright; not wrapped
    theta_dot: jax.Array


class Pendulum(Environment):
    """Observation `[cos theta, sin theta, theta_dot]`; action: the torque, shape `(1,)`."""

    max_episode_steps = 200
    MAX_TORQUE = 2.0

    @property
    def default_params(self) -> PendulumParams:
        return PendulumParams()

    def reset_env(self, key: jax.Array, params: PendulumParams):
        high = jnp.array([math.pi, 1.0], jnp.float32)
        theta, theta_dot = jax.random.uniform(key, (2,), jnp.float32, -high, high)
        state = PendulumState(theta=theta, theta_dot=theta_dot)
        return self._obs(state), state

    def step_env(self, key: jax.Array, state: PendulumState, action: jax.Array, params):
        th, thdot = state.theta, state.theta_dot
        g, m, length, dt = params.gravity, params.mass, params.length, params.dt
        u = jnp.clip(action[0], -self.MAX_TORQUE, self.MAX_TORQUE)
        costs = _angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * u**2
        thdot = thdot + (3 * g / (2 * length) * jnp.sin(th) + 3.0 / (m * length**2) * u) * dt
        thdot = jnp.clip(thdot, -params.max_speed, params.max_speed)
        state = PendulumState(theta=th + thdot * dt, theta_dot=thdot)
        reward = (-costs).astype(jnp.float32)
        return self._obs(state), state, reward, jnp.bool_(False), jnp.bool_(False), {}

    def _obs(self, state: PendulumState) -> jax.Array:
        obs = [jnp.cos(state.theta), jnp.sin(state.theta), state.theta_dot]
        return jnp.stack(obs).astype(jnp.float32)

    def observation_space(self, params: PendulumParams) -> Box:
        high = [1.0, 1.0, params.max_speed]
        return Box([-h for h in high], high, (3,))

    def action_space(self, params: PendulumParams) -> Box:
        return Box(-self.MAX_TORQUE, self.MAX_TORQUE, (1,))

    def validate_params(self, params: PendulumParams) -> None:
        check_positive(params, *param_fields(params), owner=self.name)


def _angle_normalize(x: jax.Array) -> jax.Array:
    return ((x + math.pi) % (2 * math.pi)) - math.pi
