"""MountainCarContinuous: drive an under-powered car up a hill by rocking it back and forth.

Reference: gymnasium's `MountainCarContinuous-v0`
(`gymnasium/envs/classic_control/continuous_mountain_car.py`), after Moore, "Efficient memory-based
learning for robot control" (1990). Same dynamics (the force is the action clipped to
`[-1, 1]`), reward (`-0.1 action^2`, with the action as given, not clipped, as in gymnasium, plus
100 on reaching the goal), termination and start distribution; the 999-step limit is applied by
`TimeLimit`.

The action bounds are class constants rather than parameters because they bound the action space,
and spaces are static (they cannot depend on params traced under `vmap`).
`render` draws a state as gymnasium's picture does (the hill `hill_height(position)`, the car on
it, the goal's flag), in NumPy.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from rlsuite.envs.rendering import Canvas

from rlsuite.environment import Environment
from rlsuite.environment.spaces import Box
from rlsuite.ops.validators import check_positive


@struct.dataclass
class MountainCarContinuousParams:
    min_position: float = -1.2
    max_position: float = 0.6
    max_speed: float = 0.07
    goal_position: float = 0.45
    goal_velocity: float = 0.0
    power: float = 0.0015
    gravity: float = 0.0025


@struct.dataclass
class MountainCarContinuousState:
    position: jax.Array
    velocity: jax.Array


class MountainCarContinuous(Environment):
    """Observation `[position, velocity]`; action: the force, shape `(1,)`."""

    max_episode_steps = 999
    MIN_ACTION = -1.0
    MAX_ACTION = 1.0

    @property
    def default_params(self) -> MountainCarContinuousParams:
        return MountainCarContinuousParams()

    def reset_env(self, key: jax.Array, params: MountainCarContinuousParams):
        position = jax.random.uniform(key, (), jnp.float32, -0.6, -0.4)
        state = MountainCarContinuousState(position=position, velocity=jnp.zeros((), jnp.float32))
        return self._obs(state), state

    def step_env(self, key: jax.Array, state, action: jax.Array, params):
        force = jnp.clip(action[0], self.MIN_ACTION, self.MAX_ACTION)
        velocity = state.velocity + (
            force * params.power - params.gravity * jnp.cos(3 * state.position)
        )
        velocity = jnp.clip(velocity, -params.max_speed, params.max_speed)
        position = jnp.clip(state.position + velocity, params.min_position, params.max_position)
        velocity = jnp.where((position == params.min_position) & (velocity < 0), 0.0, velocity)
        state = MountainCarContinuousState(position=position, velocity=velocity)
        terminated = (position >= params.goal_position) & (velocity >= params.goal_velocity)
        reward = jnp.where(terminated, 100.0, 0.0) - action[0] ** 2 * 0.1
        return self._obs(state), state, reward.astype(jnp.float32), terminated, jnp.bool_(False), {}

    def _obs(self, state: MountainCarContinuousState) -> jax.Array:
        return jnp.stack([state.position, state.velocity]).astype(jnp.float32)

    def observation_space(self, params: MountainCarContinuousParams) -> Box:
        low = [params.min_position, -params.max_speed]
        high = [params.max_position, params.max_speed]
        return Box(low, high, (2,))

    def action_space(self, params: MountainCarContinuousParams) -> Box:
        return Box(self.MIN_ACTION, self.MAX_ACTION, (1,))

    def validate_params(self, params: MountainCarContinuousParams) -> None:
        check_positive(params, "max_speed", "power", "gravity", owner=self.name)

    def render(self, state, params: MountainCarContinuousParams, width: int, height: int):
        """uint8 RGB `[height, width, 3]`, on white, one scale `s = min(width / (max_position -
        min_position), height / 1.2)` pixels per unit on both axes: position `p` at column
        `(width - (max_position - min_position) s) / 2 + (p - min_position) s`, height `h` at
        row `height - h s`. The ground (green-grey (110, 140, 90)) fills the image below the
        hill `hill_height(p)` over `[min_position, max_position]`; the flag at `goal_position`:
        a black pole 0.15 high (2 px wide) from the hill, a yellow (204, 204, 0) 0.08 x 0.05
        flag at its top, to the right; the car at `position`: a black body 0.12 long and 0.06
        thick, round-ended, along the hill's slope, its axis 0.06 above the hill, and grey
        (128, 128, 128) wheels of radius 0.025 at 0.04 either side of its middle, 0.025 above
        the hill."""
        low, high = float(params.min_position), float(params.max_position)
        scale = min(width / (high - low), height / 1.2)
        left = (width - (high - low) * scale) / 2

        def pixel(p, up=0.0, along=0.0):  # `along` the slope at p, `up` normal to it
            angle = math.atan(1.35 * math.cos(3 * p))  # of the hill at p
            x = p + along * math.cos(angle) - up * math.sin(angle)
            y = hill_height(p) + along * math.sin(angle) + up * math.cos(angle)
            return left + (x - low) * scale, height - y * scale

        canvas = Canvas(width, height, (255, 255, 255))
        p = np.clip((canvas.x - left) / scale + low, low, high)
        on_hill = (canvas.x >= left) & (canvas.x <= left + (high - low) * scale)
        canvas.fill(on_hill & (canvas.y >= height - hill_height(p) * scale), (110, 140, 90))
        goal = float(params.goal_position)
        x, y = pixel(goal)
        canvas.segment(x, y, x, y - 0.15 * scale, 1.0, (0, 0, 0))
        canvas.rectangle(x, y - 0.15 * scale, x + 0.08 * scale, y - 0.1 * scale, (204, 204, 0))
        car = float(np.asarray(state.position))
        canvas.segment(*pixel(car, 0.06, -0.03), *pixel(car, 0.06, 0.03), 0.03 * scale, (0,) * 3)
        for along in (-0.04, 0.04):
            canvas.disk(*pixel(car, 0.025, along), 0.025 * scale, (128, 128, 128))
        return canvas.image


def hill_height(position):
    """The hill's height at `position`, gymnasium's `0.45 sin(3 position) + 0.55`: its slope,
    `1.35 cos(3 position)`, is what the dynamics' gravity term `-gravity cos(3 position)`
    follows."""
    return 0.45 * np.sin(3 * position) + 0.55
