"""MountainCarContinuous: drive an under-powered car up a hill by rocking it back and forth.

Reference: gymnasium's `MountainCarContinuous-v0`
(`gymnasium/envs/classic_control/continuous_mountain_car.py`), after Moore, "Efficient memory-based
learning for robot control" (1990). Same dynamics (the force is the action clipped to
`[-1, 1]`), reward (`-0.1 action^2`, with the action as given, not clipped, as in gymnasium, plus
100 on reaching the goal), termination and start distribution; the 999-step limit is applied by
`TimeLimit`.

The action bounds are class constants rather than parameters because they bound the action space,
and spaces are static (they cannot depend on params traced under `vmap`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

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
