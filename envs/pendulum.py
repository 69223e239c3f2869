"""Pendulum: swing a torque-limited pendulum up and keep it upright.

Reference: gymnasium's `Pendulum-v1` (`gymnasium/envs/classic_control/pendulum.py`). Same dynamics
(semi-implicit Euler with the angular velocity clipped), reward
`-(angle_normalize(theta)^2 + 0.1 theta_dot^2 + 0.001 u^2)` with the clipped torque `u`, no
termination and the same start distribution; the 200-step limit is applied by `TimeLimit`.

The torque limit `MAX_TORQUE` is a class constant rather than a parameter because it is the bound
of the action space, and spaces are static (they cannot depend on params traced under `vmap`).
`render` draws a state as gymnasium's picture does (the pole from a pivot, upright at theta = 0,
turning counterclockwise as theta grows), in NumPy.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from rlsuite.envs.rendering import Canvas

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

    def disturbance_shape(self, params: PendulumParams) -> tuple[int, ...]:
        return (1,)

    def disturb(self, state: PendulumState, params: PendulumParams, disturbance: jax.Array):
        """An external torque `disturbance[0]` on the next step, as an impulse at its start:
        `theta_dot` gains `3 / (m l^2) * torque * dt`. The step's velocity update is linear in
        the torque, so the motion is the one the torque would give added to the motor's after
        its clip, whatever the motor's limit; the step's cost counts the motor's torque only,
        and the velocity after the impulse."""
        m, length = params.mass, params.length
        kick = 3.0 / (m * length**2) * disturbance[0] * params.dt
        return state.replace(theta_dot=state.theta_dot + kick)

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

    def render(self, state: PendulumState, params: PendulumParams, width: int, height: int):
        """uint8 RGB `[height, width, 3]`: the pole (red, (204, 77, 77), 0.4 of the smaller side
        long and 0.08 of it thick, round ends) from the pivot (black disk, 0.02 of the smaller
        side in radius) at the image's centre, on white. At `theta = 0` it points straight up
        (the unstable equilibrium of the dynamics); a growing `theta` turns it counterclockwise
        (the way a positive torque turns it), so the tip is at `(-sin theta, cos theta)` times
        its length, x right and y up: `theta > 0` leans it left."""
        side = min(width, height)
        theta = float(np.asarray(state.theta))
        canvas = Canvas(width, height, (255, 255, 255))
        x0, y0, pole = width / 2, height / 2, 0.4 * side
        tip = (x0 - pole * math.sin(theta), y0 - pole * math.cos(theta))
        canvas.segment(x0, y0, *tip, 0.04 * side, (204, 77, 77))
        canvas.disk(x0, y0, 0.02 * side, (0, 0, 0))
        return canvas.image


def _angle_normalize(x: jax.Array) -> jax.Array:
    return ((x + math.pi) % (2 * math.pi)) - math.pi
